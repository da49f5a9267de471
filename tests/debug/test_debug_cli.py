"""The debug and explain commands through the Typer app (in process: the compiled state is shared with the other
debug tests), their JSON, dumps, workspace record, exit codes, and the renderer in every mode."""

from __future__ import annotations

import json

import pytest
from debug_helpers import CASES, MODULES
from typer.testing import CliRunner

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def invoke():
    from sdcompile.cli.app import app

    runner = CliRunner()

    def run(*args: str):
        return runner.invoke(app, list(args), env={"COLUMNS": "200"})

    return run


def test_json_carries_every_site_and_the_dumps_exist(invoke, mindiesd_cache, tmp_path):
    result = invoke("debug", "--model-file", f"{MODULES}:type2", "--group", "WanRmsNormPatternGroup", "--json",
                    "--repo", str(mindiesd_cache), "--workdir", str(tmp_path))
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    assert data["passed"] is False and data["device"] == "cpu (emulated npu)"
    [site] = data["sites"]
    assert site["verdict"] == "mismatch" and site["groups"][0]["mismatch_type"] == 2
    folder = tmp_path / "mismatch_modules-type2" / "rmsnorm" / "debug"
    assert data["report_dir"] == str(folder)
    for stage in ("dynamo", "aot", "before_freezing", "after_freezing"):
        text = (folder / f"{stage}.mismatch_modules-type2.txt").read_text()
        assert "# File: " in text and "mismatch_modules.py" in text  # source-line comments
    assert (folder / "pattern.WanRmsNormPattern-torch.bfloat16.txt").is_file()
    assert (folder / "after_patterns.mismatch_modules-type2.WanRmsNormPatternGroup.txt").is_file()
    meta = json.loads((folder / "metadata.json").read_text())
    assert meta["torch"] and meta["diffusers"] and meta["target_version"] == "3.1.0"
    assert meta["device"] == "cpu (emulated npu)" and meta["stage"] == "before_freezing"
    assert meta["groups"] == [{"group": "WanRmsNormPatternGroup", "flag": "enable_wan_rmsnorm", "unit_hits": 2,
                               "model_hits": 0, "model_by_pattern": {},
                               "unit_by_pattern": {"WanRmsNormPattern-torch.bfloat16": 2},
                               "model_hits_before_freezing": None}]
    assert meta["device_mode"] == "emulated"
    assert json.loads((folder / "debug.json").read_text())["summary"] == data["summary"] and data["verdict"] == "fail"
    state = json.loads((tmp_path / "mismatch_modules-type2" / "rmsnorm" / "state.json").read_text())
    assert state["phases"]["debug"]["verdict"] == "fail"


def test_exit_0_when_every_site_matches(invoke, mindiesd_cache, tmp_path):
    result = invoke("debug", "--model-file", f"{MODULES}:control", "--group", "WanRmsNormPatternGroup",
                    "--repo", str(mindiesd_cache), "--workdir", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert "PASS: every RMSNorm site matches (1 site(s))" in result.stdout


@pytest.mark.parametrize("args", [
    ("debug", "--model", "flux", "--op", "rmsnorm", "--stage", "while-freezing"),
    ("debug", "--model", "flux"),
    ("debug", "--model", "flux", "--op", "softmax"),
    ("explain", "mismatch", "9"),
    ("explain", "cooking"),
])
def test_bad_input_exits_2_with_one_line(invoke, args):
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: ") and len(result.stderr.strip().splitlines()) == 1


def test_explain_json_and_text(invoke):
    result = invoke("explain", "--json", "mismatch", "2")
    assert result.exit_code == 0
    [entry] = json.loads(result.stdout)["types"]
    assert entry["name"] == "constant mismatch" and {c["key"] for c in entry["causes"]} >= {"eps", "dims"}
    text = invoke("explain", "mismatch", "6")
    assert text.exit_code == 0 and "placeholder vs get_attr" in text.stdout and "graph-entry" in text.stdout
    topics = invoke("explain")
    assert "graph-comparison" in topics.stdout and "mismatch" in topics.stdout
    guide = invoke("explain", "graph-comparison")
    assert guide.exit_code == 0 and "Align from the output" in guide.stdout


@pytest.mark.parametrize("case", sorted(CASES))
def test_renderer_names_type_fix_and_both_sides(case_run, case):
    from rich.console import Console

    from sdcompile.phases.debug.render import render_debug

    result = case_run(case)
    console = Console(record=True, width=160)
    render_debug(console, result, show_patterns=True)
    text = console.export_text()
    assert text.startswith("debug — ") and "graph breaks: 0" in text
    assert "Candidate sites" in text and "as registered:" in text
    if result.passed:
        assert "PASS:" in text
        return
    assert "FAIL:" in text and "fix:" in text
    number = case.removeprefix("type")
    assert f"type {number} (" in text and f"sdcompile explain mismatch {number}" in text
    assert "pattern (" in text and "model" in text  # the side-by-side pair
