"""sdcompile_capture.json (written by `sdcompile profile` beside a CPU capture) is checked against its shape when read:
a malformed one is exit 2 naming the file and the field, never a KeyError or AttributeError (exit 70)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sdcompile.core.profiles.locate import CAPTURE_INFO

DATA = Path(__file__).resolve().parent / "data" / "level0_shapes"


def _labelled(tmp_path: Path, note: bytes) -> tuple[Path, Path]:
    """A copy of the eager fixture whose run folder carries `note` as its capture file; (the copy, the file)."""
    copy = shutil.copytree(DATA / "eager", tmp_path / "eager")
    [run_dir] = copy.glob("*_ascend_pt")
    (run_dir / CAPTURE_INFO).write_bytes(note)
    return copy, run_dir / CAPTURE_INFO


def _audit(eager: Path, compiled: Path):
    from sdcompile.cli.app import app

    return CliRunner().invoke(app, ["copy-audit", str(eager), str(compiled), "--json"])


@pytest.mark.parametrize(("note", "said"), [
    (b"{not json", "is not valid JSON"),
    (b"\xff\xfe{}", "is not valid JSON"),
    (b"[]", "holds a list, not an object of capture fields"),
    (b"null", "holds null, not an object of capture fields"),
    (b'"cpu"', "holds a string, not an object of capture fields"),
    (b'{"source": 3}', "field 'source' is an integer, expected string"),
    (b'{"device": ["cpu"]}', "field 'device' is a list, expected string"),
    (b'{"steps": "2"}', "field 'steps' is a string, expected integer"),
    (b'{"rows": true}', "field 'rows' is a boolean, expected integer"),
    (b'{"pattern_hits": 1.5}', "field 'pattern_hits' is a number, expected integer or null"),
    (b'{"pass_log_counts": [1, "2"]}', "field 'pass_log_counts' is a list, expected list of integers"),
    (b'{"pass_log_counts": {"a": 1}}', "field 'pass_log_counts' is an object, expected list of integers"),
])
def test_a_malformed_capture_file_is_exit_2_naming_the_file_and_the_field(tmp_path, note, said):
    eager, info = _labelled(tmp_path, note)
    result = _audit(eager, DATA / "compile")
    assert result.exit_code == 2, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: {info}") and said in line, line
    assert "re-run `sdcompile profile`" in line


@pytest.mark.parametrize(("note", "source", "device"), [
    ({}, "cpu capture", "cpu"),  # every field has a default
    ({"source": "cpu capture", "device": "cpu"}, "cpu capture", "cpu"),  # as a user labels one by hand
    ({"source": "torch.profiler (CPU)", "device": "cpu (emulated npu)", "model": "flux", "mode": "compile",
      "dtype": "bf16", "torch": "2.9.0", "backend": "default (MindieSDBackend)", "target": "/t", "steps": 2,
      "rows": 40, "pattern_hits": None, "pass_log_counts": [3, 0], "note": "a CPU profile", "extra": {"kept": 1}},
     "torch.profiler (CPU)", "cpu (emulated npu)"),  # as `sdcompile profile` writes it, with a field it does not know
])
def test_a_well_formed_capture_file_labels_the_profile(tmp_path, note, source, device):
    from sdcompile.core.profiles.catalog import load_catalog
    from sdcompile.core.profiles.profile import load_profile

    eager, _ = _labelled(tmp_path, json.dumps(note).encode())
    profile = load_profile(eager, load_catalog())
    assert (profile.source, profile.device, profile.source_from) == (source, device, "sdcompile_capture.json")
