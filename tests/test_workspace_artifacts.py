"""Every workspace artifact carries `schema_version` and is read back through its checked reader: an artifact this
sdcompile cannot read is exit 2 naming the file and the field or version, never a KeyError."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from sdcompile.util.errors import EXIT_BAD_INPUT, BadInput
from sdcompile.workspace.artifacts import (
    ARTIFACTS,
    SCHEMA_KEY,
    ArtifactError,
    ArtifactUnreadable,
    artifact_text,
    read_artifact,
    write_artifact,
)
from sdcompile.workspace.store import Workspace

# the smallest content every reader accepts, per artifact
MINIMAL = {
    "analysis": {"dtype": "bf16", "device": "cpu", "analysis": {"implementations": []}},
    "scaffold": {"decision": "reuse", "sites": [], "files": []},
    "run": {"phases": {}},
    "state": {"model": "flux", "op": "rmsnorm", "phases": {}},
    "capture": {"metadata": {}, "graphs": []},
}


@pytest.mark.parametrize("kind", sorted(ARTIFACTS))
def test_every_artifact_round_trips_with_its_version_first(kind, tmp_path):
    path = write_artifact(kind, tmp_path / ARTIFACTS[kind].file, MINIMAL.get(kind, {"verdict": "pass"}))
    text = path.read_text(encoding="utf-8")
    assert text.startswith('{\n  "schema_version": ') and text.endswith("}\n")
    doc = read_artifact(kind, path)
    assert doc == {SCHEMA_KEY: ARTIFACTS[kind].version, **MINIMAL.get(kind, {"verdict": "pass"})}
    assert list(doc)[0] == SCHEMA_KEY


@dataclass(frozen=True)
class _Report:
    verdict: str
    items: tuple[str, ...]


def test_a_result_dataclass_is_written_as_json_and_a_rewrite_keeps_one_current_version(tmp_path):
    path = write_artifact("verify", tmp_path / "verify.json", _Report("pass", ("a", "b")))
    assert json.loads(path.read_text()) == {SCHEMA_KEY: 1, "verdict": "pass", "items": ["a", "b"]}
    write_artifact("verify", path, {**read_artifact("verify", path), SCHEMA_KEY: 0, "verdict": "fail"})
    assert read_artifact("verify", path) == {SCHEMA_KEY: 1, "verdict": "fail", "items": ["a", "b"]}
    assert artifact_text("verify", {"verdict": "é"}).count("é") == 1  # written as text, not \u escapes


def test_an_artifact_is_written_only_under_its_own_name(tmp_path):
    with pytest.raises(ValueError, match="written to analysis.json, not other.json"):
        write_artifact("analysis", tmp_path / "other.json", MINIMAL["analysis"])


def test_an_artifact_an_older_sdcompile_wrote_is_refused_with_the_command_that_rewrites_it(tmp_path):
    path = tmp_path / "analysis.json"
    path.write_text(json.dumps(MINIMAL["analysis"]))
    with pytest.raises(ArtifactError) as err:
        read_artifact("analysis", path)
    assert err.value.message == (f"{path}: schema_version 0 (it has none), this sdcompile reads 2: "
                                 "an older sdcompile wrote it")
    assert "rerun `sdcompile analyze`" in err.value.fix
    assert err.value.exit_code == EXIT_BAD_INPUT
    assert not isinstance(err.value, ValueError)  # not mistaken for a cut-short file by readers that skip those


def test_an_artifact_a_newer_sdcompile_wrote_is_refused(tmp_path):
    path = tmp_path / "scaffold.json"
    path.write_text(json.dumps({SCHEMA_KEY: 7, **MINIMAL["scaffold"]}))
    with pytest.raises(ArtifactError, match=r"scaffold.json: schema_version 7, this sdcompile reads 2: a newer") as err:
        read_artifact("scaffold", path)
    assert err.value.fix.startswith("upgrade sdcompile")


@pytest.mark.parametrize(("kind", "doc", "message"), [
    ("analysis", {"dtype": "bf16", "device": "cpu"}, 'it has no "analysis" (an object)'),
    ("analysis", {"dtype": "bf16", "device": "cpu", "analysis": {}}, 'it has no "analysis.implementations" (an array)'),
    ("analysis", {"dtype": 16, "device": "cpu", "analysis": {"implementations": []}},
     'its "dtype" is an integer, where a string belongs'),
    ("analysis", {"dtype": "bf16", "device": "cpu", "analysis": {"implementations": [], "unexercised": {}}},
     'its "analysis.unexercised" is an object, where an array belongs'),
    ("scaffold", {"decision": "reuse", "sites": [], "files": {}}, 'its "files" is an object, where an array belongs'),
    ("integrate", {"model_compile": {"replacements": "2"}},
     'its "model_compile.replacements" is a string, where an integer belongs'),
    ("integrate", {"log": {"hits": {"lines": 1}}}, 'it has no "log.hits.total" (an integer)'),
    ("state", {"model": "flux", "op": "rmsnorm", "phases": []}, 'its "phases" is an array, where an object belongs'),
    ("run", {"phases": None}, 'its "phases" is null, where an object belongs'),
])
def test_a_missing_or_mistyped_field_names_the_file_and_the_field(kind, doc, message, tmp_path):
    path = tmp_path / ARTIFACTS[kind].file
    path.write_text(json.dumps({SCHEMA_KEY: ARTIFACTS[kind].version, **doc}))
    with pytest.raises(ArtifactError) as err:
        read_artifact(kind, path)
    assert err.value.message == f"{path} is not {ARTIFACTS[kind].title}: {message}"
    assert err.value.exit_code == EXIT_BAD_INPUT


def test_optional_fields_may_be_absent_or_null(tmp_path):
    path = write_artifact("integrate", tmp_path / "integrate.json", {"model_compile": None, "log": None})
    assert read_artifact("integrate", path)["log"] is None
    path = write_artifact("scaffold", tmp_path / "scaffold.json", {**MINIMAL["scaffold"], "names": None})
    assert read_artifact("scaffold", path)["names"] is None


@pytest.mark.parametrize(("content", "message"), [
    ("{not json", " is not a debug report (not valid JSON: "),
    ("[1]", " is not a debug report (an array where a JSON object belongs)"),
    ('{"schema_version": "1"}', ': "schema_version" is a string, where an integer belongs'),
])
def test_a_file_that_is_no_artifact_at_all_is_bad_input_naming_it(content, message, tmp_path):
    path = tmp_path / "debug.json"
    path.write_text(content)
    with pytest.raises(ArtifactError) as err:
        read_artifact("debug", path)
    assert err.value.message.startswith(f"{path}{message}")
    assert isinstance(err.value, BadInput)
    # only a file that is not JSON is also a ValueError: readers that treat a cut-short file as absent still do
    assert isinstance(err.value, ArtifactUnreadable) == (content == "{not json")


def test_a_missing_artifact_is_the_readers_decision(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_artifact("analysis", tmp_path / "analysis.json")


# --------------------------------------------------------------------------------- state.json, the pair's record
def test_the_pairs_state_is_written_with_its_version(tmp_path):
    ws = Workspace(tmp_path)
    ws.record("flux", "rmsnorm", "analyze", "pass", "done")
    doc = json.loads((tmp_path / "flux" / "rmsnorm" / "state.json").read_text())
    assert doc[SCHEMA_KEY] == ARTIFACTS["state"].version and set(doc["phases"]) == {"analyze"}


def test_an_unversioned_state_file_of_the_same_shape_is_read_as_version_1(tmp_path):
    ws = Workspace(tmp_path)
    rec = ws.record("flux", "rmsnorm", "analyze", "pass", "done")
    path = tmp_path / "flux" / "rmsnorm" / "state.json"
    doc = json.loads(path.read_text())
    del doc[SCHEMA_KEY]
    path.write_text(json.dumps(doc))  # as sdcompile wrote it before it wrote versions
    assert ws.load_pair("flux", "rmsnorm").phases == {"analyze": rec}
    ws.record("flux", "rmsnorm", "scaffold", "pass", "done")  # the next record rewrites it versioned
    assert json.loads(path.read_text())[SCHEMA_KEY] == 1


def test_a_state_file_of_a_newer_version_is_exit_2_through_the_cli(cli, tmp_path):
    path = tmp_path / "ws" / "flux" / "rmsnorm" / "state.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({SCHEMA_KEY: 2, **MINIMAL["state"]}))
    result = cli("status", "--workdir", str(tmp_path / "ws"), cwd=tmp_path)
    assert result.exit_code == EXIT_BAD_INPUT, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: {path}: schema_version 2, this sdcompile reads 1: a newer sdcompile wrote it")
    assert "Traceback" not in result.stderr


# ------------------------------------------------------------------------- run.json, what `sdcompile run` keeps
def test_what_a_run_keeps_is_written_with_its_version_and_an_unversioned_one_is_read_as_version_1(tmp_path):
    from sdcompile.lifecycle.state import KeptPhase, RunMemory

    kept = KeptPhase("f1", "2026-01-01T00:00:00+00:00", "t1")
    RunMemory(tmp_path).remember("analyze", kept)
    path = tmp_path / "run.json"
    doc = json.loads(path.read_text())
    assert doc[SCHEMA_KEY] == ARTIFACTS["run"].version
    del doc[SCHEMA_KEY]
    path.write_text(json.dumps(doc))  # as sdcompile wrote it before it wrote versions
    assert RunMemory(tmp_path).phases == {"analyze": kept}


def test_a_run_record_of_a_newer_version_is_bad_input_naming_it(tmp_path):
    from sdcompile.lifecycle.state import RunMemory

    path = tmp_path / "run.json"
    path.write_text(json.dumps({SCHEMA_KEY: 3, "phases": {}}))
    with pytest.raises(ArtifactError, match=r"run\.json: schema_version 3, this sdcompile reads 1") as err:
        RunMemory(tmp_path)
    assert err.value.exit_code == EXIT_BAD_INPUT and "delete it" in err.value.fix


def test_a_resumed_run_scaffolds_again_over_a_record_it_cannot_keep(tmp_path):
    """An older sdcompile's scaffold.json, or one cut short, is not kept: the run redoes phase 2, as for a missing
    record, instead of stopping on a file the run itself rewrites."""
    from sdcompile.phases.scaffold.facts import pair_facts

    ws = Workspace(tmp_path)
    path = ws.pair_dir("wan", "rmsnorm") / "scaffold" / "scaffold.json"
    path.parent.mkdir()
    path.write_text(json.dumps(MINIMAL["scaffold"]))
    with pytest.raises(ArtifactError, match=r"scaffold\.json: schema_version 0"):
        read_artifact("scaffold", path)
    assert pair_facts(ws, "wan", "rmsnorm") is None
    path.write_text('{"decision": "reu')
    assert pair_facts(ws, "wan", "rmsnorm") is None
    write_artifact("scaffold", path, MINIMAL["scaffold"])  # current, but not a whole ScaffoldResult
    assert pair_facts(ws, "wan", "rmsnorm") is None
    whole = json.loads((Path(__file__).parent / "rendering/data/wan.scaffold.json").read_text(encoding="utf-8"))
    write_artifact("scaffold", path, whole)  # a result this sdcompile wrote: kept, read back into its dataclass
    facts = pair_facts(ws, "wan", "rmsnorm")
    assert (facts.decision, facts.flag, facts.covering) == (whole["decision"], whole["names"]["flag"],
                                                           ("WanRmsNormPatternGroup",))


# --------------------------------------------------- copy-audit reads the integrate record of the same model/op
def test_copy_audit_reads_the_integrate_record_and_refuses_an_older_one(cli, tmp_path):
    from pathlib import Path

    profiles = Path(__file__).resolve().parent / "profiles" / "data" / "level0_shapes"
    args = ("copy-audit", str(profiles / "eager"), str(profiles / "compile"), "--model", "flux", "--op", "rmsnorm",
            "--workdir", str(tmp_path / "ws"), "--json")
    record = tmp_path / "ws" / "flux" / "rmsnorm" / "integrate.json"
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"model_compile": {"replacements": 4}, "log": None}))  # as sdcompile wrote it before
    old = cli(*args)
    assert old.exit_code == EXIT_BAD_INPUT, old.stderr
    assert f"{record}: schema_version 0 (it has none), this sdcompile reads 1" in old.stderr
    assert "rerun `sdcompile integrate`" in old.stderr
    write_artifact("integrate", record, {"model_compile": {"replacements": 4}, "log": None})
    ok = cli(*args)
    assert ok.exit_code == 0, ok.stderr
    assert json.loads(ok.stdout)["recommendation"]["inputs"]["pattern_hits"] == 4
    assert json.loads((record.parent / "copy-audit.json").read_text())[SCHEMA_KEY] == ARTIFACTS["copy-audit"].version


def test_an_artifact_that_is_not_utf8_or_not_a_file_is_exit_2_naming_it(tmp_path):
    path = tmp_path / "analysis.json"
    path.write_bytes(b"\xff\xfe{")
    with pytest.raises(ArtifactError, match=r"analysis\.json is not an analysis record \(not UTF-8 text") as err:
        read_artifact("analysis", path)
    assert isinstance(err.value, ValueError) and err.value.exit_code == EXIT_BAD_INPUT  # read as cut short
    path.unlink()
    path.mkdir()
    with pytest.raises(ArtifactError, match=r"analysis\.json cannot be read as an analysis record") as err:
        read_artifact("analysis", path)
    assert err.value.exit_code == EXIT_BAD_INPUT
    with pytest.raises(FileNotFoundError):  # whether a missing file is an error stays the reader's decision
        read_artifact("analysis", tmp_path / "missing" / "analysis.json")
