"""`sdcompile doctor` and the torch version gate, run as a user runs them: the CLI in a fresh process, with a fake
torch dist-info first on PYTHONPATH where a test needs another torch version (importlib.metadata reads the first)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from importlib import metadata

import pytest

from sdcompile.core.torchcompat.support import torch_support
from tests.conftest import REPO_ROOT, run_cli

RUNNING_TORCH = metadata.version("torch")
RELEASE = tuple(int(p) for p in re.match(r"(\d+)\.(\d+)", RUNNING_TORCH).groups())
TORCH_RELEASE = re.match(r"\d+\.\d+\.\d+", RUNNING_TORCH).group(0)  # the emulated torch_npu X.Y.Z pairs with it
HEAVY = ("torch", "diffusers", "pandas")
PROFILES = REPO_ROOT / "tests" / "profiles" / "data" / "level0_short"


def fake_torch(tmp_path, version: str) -> dict[str, str]:
    """An environment whose importlib.metadata reports torch `version` (the real torch stays importable, so a
    command that did any work would show it)."""
    site = tmp_path / f"fake-torch-{version}"
    (site / f"torch-{version}.dist-info").mkdir(parents=True, exist_ok=True)
    (site / f"torch-{version}.dist-info" / "METADATA").write_text(f"Metadata-Version: 2.1\nName: torch\n"
                                                                  f"Version: {version}\n")
    return {"PYTHONPATH": str(site)}


def run_probed(argv: list[str], env: dict[str, str], cwd, prelude: str = "") -> tuple[int, str, str, list[str]]:
    """Run the CLI in-process in a fresh interpreter; also report which heavy modules it imported."""
    code = (f"import sys\n{prelude}\nfrom sdcompile.cli.app import main\ncode = 0\n"
            f"try:\n    main({argv!r})\nexcept SystemExit as exc:\n    code = exc.code or 0\n"
            f"print('HEAVY=' + ','.join(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)\n"
            "sys.exit(code)\n")
    import os

    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "COLUMNS": "200", **env})
    lines = proc.stderr.splitlines()
    heavy = [line.removeprefix("HEAVY=") for line in lines if line.startswith("HEAVY=")]
    rest = "\n".join(line for line in lines if not line.startswith("HEAVY="))
    return proc.returncode, proc.stdout, rest, heavy[0].split(",") if heavy and heavy[0] else []


def test_the_fake_dist_info_is_what_metadata_reads(tmp_path):
    env = fake_torch(tmp_path, "2.6.0")
    proc = subprocess.run([sys.executable, "-c", "from importlib.metadata import version; print(version('torch'))"],
                          capture_output=True, text=True, env={"PATH": "/usr/bin", **env})
    assert proc.stdout.strip() == "2.6.0"


# ------------------------------------------------------------------------------------------------------ the gate
GATED = [
    ["analyze", "--model", "flux", "--op", "rmsnorm"],
    ["scaffold", "--model", "flux", "--op", "rmsnorm"],
    ["verify", "--all-groups"],
    ["debug", "--model", "flux", "--op", "rmsnorm"],
    ["run", "--model", "flux", "--op", "rmsnorm"],
    ["profile", "--model", "flux", "--mode", "eager", "--out", "prof"],
    ["integrate", "--model", "flux", "--op", "rmsnorm"],
    ["register", "--check", "--import"],
]


@pytest.mark.parametrize("version", ["2.6.0", "2.14.0"])
@pytest.mark.parametrize("argv", GATED, ids=lambda a: " ".join(a[:2]))
def test_an_unsupported_torch_stops_torch_commands_in_one_line_before_any_work(argv, version, tmp_path):
    code, stdout, stderr, heavy = run_probed(argv, fake_torch(tmp_path, version), tmp_path)
    assert code == 3, stderr
    assert stdout == ""
    assert stderr.splitlines() == [stderr.strip()], stderr  # one line
    assert stderr.startswith(f"error: torch {version} has no MindIE-SD plugin variant: `sdcompile {argv[0]}` needs "
                             "torch 2.7, 2.9 to 2.13 (MindIE-SD 3.1.0's mindiesd/_torch_variants.py"), stderr
    assert "pip install 'torch==2.13.*'" in stderr
    assert heavy == []  # refused before anything imported torch (or built a model)
    assert not (tmp_path / ".sdcompile").exists() and not (tmp_path / "prof").exists()


def test_a_missing_torch_is_said_so(tmp_path):
    # the one stand-in: this interpreter's metadata finds no torch (its files cannot be removed from the venv)
    hide = ("import importlib.metadata as m\n_real = m.version\n"
            "def version(name):\n    if name == 'torch':\n        raise m.PackageNotFoundError(name)\n"
            "    return _real(name)\nm.version = version\n")
    code, _, stderr, heavy = run_probed(["analyze", "--model", "flux"], {}, tmp_path, prelude=hide)
    assert code == 3
    assert stderr.startswith("error: torch is not installed: `sdcompile analyze` needs torch 2.7, 2.9 to 2.13"), stderr
    assert heavy == []


@pytest.mark.parametrize("argv", [
    ["--help"], ["analyze", "--help"], ["status"], ["backends"], ["explain"],
    ["copy-audit", str(PROFILES / "eager"), str(PROFILES / "compile")],
    ["integrate", str(PROFILES / "eager"), str(PROFILES / "compile")],
], ids=lambda a: " ".join(a[:2]))
def test_commands_that_need_no_torch_work_on_an_unsupported_one(argv, tmp_path):
    code, stdout, stderr, heavy = run_probed(argv, fake_torch(tmp_path, "2.6.0"), tmp_path)
    assert code in (0, 1), stderr  # integrate without a model is "incomplete"; never refused
    assert "plugin variant" not in stderr
    assert "torch" not in heavy


def test_usage_errors_come_before_the_gate(tmp_path):
    code, _, stderr, _ = run_probed(["analyze", "--no-such-option"], fake_torch(tmp_path, "2.6.0"), tmp_path)
    assert code == 2 and "No such option" in stderr


# ---------------------------------------------------------------------------------------------------- doctor
def _doctor_json(*args, cwd, env=None) -> tuple[dict, str, int]:
    result = run_cli("doctor", "--json", *args, cwd=cwd, env=env)
    return json.loads(result.stdout), result.stderr, result.exit_code


def test_doctor_names_every_version_and_the_behaviours_of_this_torch(mindiesd_tree, tmp_path):
    doc, stderr, code = _doctor_json("--repo", str(mindiesd_tree), cwd=tmp_path)
    assert code == 0, stderr
    v = doc["versions"]
    assert v["torch_version"] == RUNNING_TORCH
    assert v["diffusers_version"] == metadata.version("diffusers")
    assert v["target_version"] == "3.1.0" and doc["target"]["version"] == "3.1.0"
    # no torch_npu here: the emulated one, paired with the installed torch
    assert v["torch_npu_emulated"] is True
    assert v["torch_npu_version"] == f"{TORCH_RELEASE}+sdcompile.emulated"
    assert doc["device"]["label"] == "cpu (emulated npu)"
    assert doc["ok"] is True and doc["problems"] == [] and doc["torch_supported"] is True
    rows = {(b["package"], b["key"]): b for b in doc["behaviours"]}
    # the headline claim of issue 12: the decomposition override holds from torch 2.12 on only
    assert rows["torch", "decomposition-override"]["holds"] is (RELEASE >= (2, 12))
    assert rows["torch", "decomposition-override"]["version_range"] == ">=2.12"
    # torch_npu 2.7 and 2.8 route Tensor.to(dtype) to npu._npu_dtype_cast; the emulation follows the torch
    assert rows["torch_npu", "to-dtype-is-_npu_dtype_cast"]["holds"] is ((2, 7) <= RELEASE < (2, 9))
    assert v["npu_behaviours"] == [key for (pkg, key), b in rows.items() if pkg == "torch_npu" and b["holds"]]
    assert f"PASS: torch {RUNNING_TORCH} is supported" in stderr  # the verdict on stderr in JSON mode


@pytest.mark.torch_independent  # finding and reading the tree
def test_doctor_finds_the_tree_as_other_commands_do(mindiesd_tree, tmp_path):
    doc, _, code = _doctor_json(cwd=mindiesd_tree / "mindiesd" / "compilation")
    assert code == 0 and doc["target"]["found_by"].startswith("search upward")
    doc, _, code = _doctor_json(cwd=tmp_path, env={"SDCOMPILE_REPO": str(mindiesd_tree)})
    assert doc["target"]["root"] == str(mindiesd_tree.resolve())  # typer reads $SDCOMPILE_REPO as --repo
    doc, _, code = _doctor_json(cwd=tmp_path)
    assert code == 0 and doc["target"] is None and "no MindIE-SD tree" in doc["target_error"]
    assert doc["versions"]["target_version"] is None
    bad = run_cli("doctor", "--repo", str(tmp_path), cwd=tmp_path)
    assert bad.exit_code == 2 and "is not a MindIE-SD tree" in bad.stderr


@pytest.mark.torch_independent  # finding and reading the tree
def test_doctor_reads_the_version_from_the_tree_when_no_dist_info_is_beside_it(mindiesd_tree, tmp_path):
    import shutil

    for dist in mindiesd_tree.glob("mindiesd-*.dist-info"):
        shutil.rmtree(dist)
    doc, _, _ = _doctor_json("--repo", str(mindiesd_tree), cwd=tmp_path)
    assert doc["target"]["version"] == "unknown"  # the 3.1.0 tree's files name no version of their own
    (mindiesd_tree / "setup.py").write_text('setup(name="mindiesd", version="3.1.0rc1")\n')
    doc, _, _ = _doctor_json("--repo", str(mindiesd_tree), cwd=tmp_path)
    assert doc["target"]["version"] == doc["versions"]["target_version"] == "3.1.0rc1"


@pytest.mark.torch_independent  # the report's layout
@pytest.mark.parametrize("width", [80, 200])
def test_doctor_reads_well_at_80_and_200_columns(width, mindiesd_tree, tmp_path):
    result = run_cli("doctor", "--repo", str(mindiesd_tree), cwd=tmp_path, env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.rstrip("\n").splitlines()
    assert lines[-1].startswith(
        f"PASS: torch {RUNNING_TORCH} is supported (2.7, 2.9 to 2.13); device cpu (emulated npu)")
    assert "MindIE-SD 3.1.0" in lines[-1]
    # only the verdict is unwrapped; a path longer than the width stays whole on its own line
    assert all(len(line) <= width or len(line.split()) == 1 for line in lines[:-1]), max(lines[:-1], key=len)
    text = result.stdout
    assert "decomposition-override" in text and "to-dtype-is-_npu_dtype_cast" in text
    state = "holds here" if RELEASE >= (2, 12) else "does not hold here"
    assert re.search(rf"decomposition-override — torch >=2\.12: {state}", text)


def test_doctor_on_an_unsupported_torch_says_problem_and_imports_no_torch(tmp_path):
    code, stdout, stderr, heavy = run_probed(["doctor"], fake_torch(tmp_path, "2.6.0"), tmp_path)
    assert code == 3, stderr
    last = stdout.rstrip("\n").splitlines()[-1]
    assert last.startswith("FAIL: torch 2.6.0 is not supported (MindIE-SD has plugin variants for torch 2.7, 2.9 to "
                           "2.13: MindIE-SD 3.1.0's mindiesd/_torch_variants.py")
    assert "pip install 'torch==2.13.*'" in last
    assert "torch's are not probed" in stdout
    assert "torch" not in heavy
    code, stdout, _, _ = run_probed(["doctor", "--json"], fake_torch(tmp_path, "2.6.0"), tmp_path)
    doc = json.loads(stdout)
    assert doc["ok"] is False and doc["problems"] == [{"key": "torch-unsupported", "detail": "2.6.0"}]
    assert doc["torch_behaviours_probed"] is False
    assert all(b["package"] == "torch_npu" for b in doc["behaviours"])


def test_the_gate_and_doctor_agree_with_torch_support():
    assert torch_support().supported  # the suite runs on a supported torch; the gate lets every command through


# ------------------------------------------------------------------------------- every result names its versions
def _assert_versions(v: dict, target: str | None):
    assert v["torch_version"] == RUNNING_TORCH and v["diffusers_version"] == metadata.version("diffusers")
    assert v["torch_npu_emulated"] is True and v["torch_npu_version"].startswith(TORCH_RELEASE)
    assert v["target_version"] == target


def _assert_versions_line(text: str, target: str | None):
    line = next(line for line in text.splitlines() if f"torch {RUNNING_TORCH} · torch_npu" in line)
    assert "(emulated; behaviours: " in line and f"diffusers {metadata.version('diffusers')}" in line
    assert (f"MindIE-SD {target}" in line) if target else ("MindIE-SD" not in line)


def test_file_reading_commands_name_their_versions_in_json_text_and_html(mindiesd_tree, tmp_path):
    status = run_cli("status", "--repo", str(mindiesd_tree), "--workdir", str(tmp_path / "ws"), "--json")
    _assert_versions(json.loads(status.stdout)["versions"], "3.1.0")
    _assert_versions_line(run_cli("status", "--repo", str(mindiesd_tree), "--workdir", str(tmp_path / "ws")).stdout,
                          "3.1.0")
    for command in ("copy-audit", "integrate"):
        html = tmp_path / f"{command}.html"
        args = (command, str(PROFILES / "eager"), str(PROFILES / "compile"))
        doc = json.loads(run_cli(*args, "--json", "--html", str(html), cwd=tmp_path).stdout)
        _assert_versions(doc["versions"], None)  # the profiles alone: no tree involved
        _assert_versions_line(run_cli(*args, cwd=tmp_path).stdout, None)
        _assert_versions_line(html.read_text(encoding="utf-8"), None)


@pytest.mark.torch_independent  # which versions a result carries; their values: the other doctor tests
def test_analyze_names_its_versions(tmp_path):
    result = run_cli("analyze", "--model", "flux", "--op", "rmsnorm", "--workdir", str(tmp_path / "ws"), "--json",
                     cwd=tmp_path)
    assert result.exit_code == 0, result.stderr
    _assert_versions(json.loads(result.stdout)["versions"], None)


# --------------------------------------------------------------------------- the range the tree's variants give
def _variants_tree(mindiesd_tree, releases):
    body = "".join(f'    "{r}": "torch{r.replace(".", "")}",\n' for r in releases)
    (mindiesd_tree / "mindiesd/_torch_variants.py").write_text(f"SUPPORTED_TORCH_PLUGIN_VARIANTS = {{\n{body}}}\n")
    return mindiesd_tree


WIDE = [f"2.{minor}" for minor in range(7, 16)]  # 2.7 to 2.15


def test_the_range_is_read_from_the_trees_variants(mindiesd_tree):
    tree = _variants_tree(mindiesd_tree, WIDE)
    wide = torch_support("2.15.0", root=tree)
    assert wide.supported and wide.untested and wide.range_text == "2.7 to 2.15"
    assert wide.variants.from_tree and wide.variants.source == str(tree / "mindiesd/_torch_variants.py")
    assert not torch_support("2.6.0", root=tree).supported
    assert torch_support("2.13.0", root=tree).supported and not torch_support("2.13.0", root=tree).untested
    fallback = torch_support("2.15.0")  # no tree: MindIE-SD 3.1.0's list, kept in the catalog
    assert not fallback.supported and fallback.range_text == "2.7, 2.9 to 2.13"
    assert "torch_variants.toml" in fallback.variants.source and not fallback.variants.from_tree
    assert not torch_support("2.8.0").supported  # 3.1.0 ships no torch 2.8 variant


def test_the_gate_accepts_a_torch_the_tree_has_a_variant_for_with_a_note(mindiesd_tree, monkeypatch, capsys):
    from sdcompile.cli.app import require_supported_torch
    from sdcompile.util.errors import EnvironmentMissing

    tree = _variants_tree(mindiesd_tree, WIDE)
    monkeypatch.setattr(metadata, "version", lambda name: "2.15.0")  # what support reads when called
    require_supported_torch("analyze", tree)  # accepted: no exception
    assert capsys.readouterr().err == ""  # said before the command's first output, not before a bad-input error
    from sdcompile.rendering.output import message

    message("analyze: starting")
    note, first = capsys.readouterr().err.splitlines()
    assert note.startswith("note: torch 2.15.0 has a MindIE-SD plugin variant") and first == "analyze: starting"
    assert "tested on torch 2.9 and 2.13" in note
    monkeypatch.setattr(metadata, "version", lambda name: "2.6.0")
    with pytest.raises(EnvironmentMissing) as refused:
        require_supported_torch("analyze", tree)
    assert refused.value.one_line().startswith(
        "torch 2.6.0 has no MindIE-SD plugin variant: `sdcompile analyze` needs torch 2.7 to 2.15 "
        f"({tree / 'mindiesd/_torch_variants.py'})")


def test_the_gate_reads_the_tree_of_sdcompile_repo(mindiesd_tree, tmp_path):
    tree = _variants_tree(mindiesd_tree, ["2.14", "2.15"])
    code, stdout, stderr, heavy = run_probed(["analyze", "--model", "flux", "--op", "rmsnorm"],
                                             {**fake_torch(tmp_path, "2.13.0"), "SDCOMPILE_REPO": str(tree)}, tmp_path)
    assert code == 3 and stdout == "" and heavy == []
    assert "needs torch 2.14 to 2.15" in stderr and "pip install 'torch==2.15.*'" in stderr
