import json

import pytest

from sdcompile.workspace.store import Workspace


def test_status_over_the_real_tree_lists_16_groups_in_registry_order(cli, mindiesd_tree, tmp_path):
    result = cli("status", "--repo", str(mindiesd_tree), "--workdir", str(tmp_path / "ws"), "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    groups = doc["target"]["groups"]
    assert len(groups) == 16
    assert groups[0]["group"] == "RMSNormPatternGroup" and groups[-1]["group"] == "MiniMaxH3RmsNormPatternGroup"
    assert doc["target"]["version"] == "3.1.0"
    assert doc["pairs"] == []

    table = cli("status", "--repo", str(mindiesd_tree), "--workdir", str(tmp_path / "ws"))
    assert table.exit_code == 0
    assert "QwenRopePatternGroup" in table.stdout and "enable_qwen_rope" in table.stdout
    assert "16 pattern groups" in table.stdout


def test_status_shows_recorded_phases(cli, mindiesd_tree, tmp_path):
    ws = Workspace(tmp_path / "ws")
    ws.record("flux", "rmsnorm", "analyze", "pass", "3 sites", device="cpu (emulated npu)")
    ws.record("flux", "rmsnorm", "verify", "fail", "0 replacements")
    result = cli("status", "--repo", str(mindiesd_tree), "--workdir", str(tmp_path / "ws"), "--json")
    pair = json.loads(result.stdout)["pairs"][0]
    assert (pair["model"], pair["op"]) == ("flux", "rmsnorm")
    assert pair["phases"]["analyze"]["verdict"] == "pass"
    assert pair["phases"]["verify"]["number"] == 4
    text = cli("status", "--repo", str(mindiesd_tree), "--workdir", str(tmp_path / "ws")).stdout
    assert "flux" in text and "fail" in text


def test_status_names_where_the_tree_came_from(cli, mindiesd_tree, tmp_path):
    by_env = cli("status", "--workdir", str(tmp_path / "ws"), cwd=tmp_path, env={"SDCOMPILE_REPO": str(mindiesd_tree)})
    assert by_env.exit_code == 0, by_env.stderr
    assert "(found by $SDCOMPILE_REPO)" in by_env.stdout and "(found by --repo)" not in by_env.stdout
    by_flag = cli("status", "--repo", str(mindiesd_tree), "--workdir", str(tmp_path / "ws"), cwd=tmp_path)
    assert "(found by --repo)" in by_flag.stdout


def test_a_reuse_has_nothing_to_register_so_status_names_the_phase_after(cli, tmp_path):
    ws = Workspace(tmp_path / "ws")
    for phase, verdict in (("analyze", "pass"), ("scaffold", "info"), ("verify", "pass")):
        ws.record("flux", "rmsnorm", phase, verdict, "")
    ws.record("wan", "rmsnorm", "analyze", "pass", "")
    ws.record("wan", "rmsnorm", "scaffold", "pass", "generate: wrote a pattern")
    result = cli("status", "--workdir", str(tmp_path / "ws"), cwd=tmp_path)
    rows = [line.split("│") for line in result.stdout.splitlines() if "│ rmsnorm" in line]
    assert {row[1].strip(): row[-2].strip() for row in rows} == {"flux": "debug", "wan": "register"}


def test_status_without_a_target_still_shows_the_workspace(cli, tmp_path):
    result = cli("status", "--workdir", str(tmp_path / "ws"), "--json", cwd=tmp_path)
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert doc["target"] is None and "no MindIE-SD tree" in doc["target_error"]
    assert "note:" in result.stderr


def test_corrupt_state_file_is_bad_input(cli, tmp_path):
    bad = tmp_path / "ws" / "flux" / "rmsnorm" / "state.json"
    bad.parent.mkdir(parents=True)
    bad.write_text("{not json")
    result = cli("status", "--workdir", str(tmp_path / "ws"), cwd=tmp_path)
    assert result.exit_code == 2 and "not a valid sdcompile state file" in result.stderr


@pytest.mark.parametrize("content", ["[]", "null", '{"model": "flux", "op": "rmsnorm", "phases": []}', "folder"])
def test_a_state_file_of_another_shape_or_a_folder_is_bad_input_naming_it(cli, tmp_path, content):
    bad = tmp_path / "ws" / "flux" / "rmsnorm" / "state.json"
    if content == "folder":
        bad.mkdir(parents=True)
    else:
        bad.parent.mkdir(parents=True)
        bad.write_text(content)
    result = cli("status", "--workdir", str(tmp_path / "ws"), cwd=tmp_path)
    assert result.exit_code == 2, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: {bad} is not ") and line.endswith("delete it to reset that pair's state")


def test_a_reader_that_stops_early_leaves_the_exit_code_alone(mindiesd_tree, tmp_path):
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "sdcompile", "status", "--repo", str(mindiesd_tree), "--workdir",
                             str(tmp_path / "ws")], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # before the process has written anything: its writes meet a closed pipe
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, err
    assert "Error" not in err and "error" not in err


def test_under_json_an_error_is_a_json_document_on_stdout_too(cli, tmp_path):
    result = cli("status", "--json", "--repo", str(tmp_path / "none"), cwd=tmp_path)
    assert result.exit_code == 2
    [line] = result.stderr.splitlines()
    assert json.loads(result.stdout) == {"error": line.removeprefix("error: "), "exit_code": 2}
    assert "is not a folder" in line
