"""`sdcompile verify` end to end in fresh processes: exit codes, --json, --plain-cpu, and the real-NPU path."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "npu"))
from npu_processes import make_fake_real_stack  # noqa: E402


def _json(result):
    assert result.stderr is not None
    return json.loads(result.stdout)


def test_gate_failure_renders_the_table_and_exits_1(cli, module_tree, tmp_path):
    r = cli("verify", "--group", "WanRmsNormPatternGroup", "--min-cosine", "1.0", "--repo", str(module_tree),
            "--workdir", str(tmp_path))
    assert r.exit_code == 1, r.stderr
    assert "WanRmsNormPatternGroup" in r.stdout and "FAIL: 0/1 group(s) pass" in r.stdout
    assert "not exercised here (cpu (emulated npu))" in r.stdout
    assert (tmp_path / "_verify" / "WanRmsNormPatternGroup" / "verify.md").is_file()
    from sdcompile.core.npu.emulation.mindiesd_standins import standin_catalog

    for standin in standin_catalog():  # the target line names every stand-in for the package's NPU-only files
        assert standin.file in r.stdout


@pytest.mark.torch_independent  # checking the options and the tree
def test_bad_input_is_one_line_and_exit_2(cli, module_tree, tmp_path):
    bad = cli("verify", "--group", "NoSuchPatternGroup", "--repo", str(module_tree), "--workdir", str(tmp_path))
    assert bad.exit_code == 2 and "no pattern group 'NoSuchPatternGroup'" in bad.stderr
    assert "Traceback" not in bad.stderr and bad.stdout == ""
    nothing = cli("verify", "--repo", str(module_tree))
    assert nothing.exit_code == 2 and "nothing to verify" in nothing.stderr and "--all-groups" in nothing.stderr


@pytest.mark.slow
def test_plain_cpu_shows_the_graph_a_machine_without_an_npu_traces(cli, target, tmp_path):
    from sdcompile.phases.verify.phase import run_verify

    # qwenimage's RMSNorm is diffusers' own: on an NPU host (this process: emulated) it calls npu_rms_norm itself.
    npu = run_verify(repo=target.tree.root, workdir=tmp_path, group="WanRmsNormPatternGroup", model="qwenimage")
    assert npu.device == "cpu (emulated npu)"
    assert npu.groups[0].model.fused_ops_before_pass.get("npu.npu_rms_norm.default", 0) > 0
    plain = _json(cli("verify", "--group", "WanRmsNormPatternGroup", "--model", "qwenimage", "--repo",
                      str(target.tree.root), "--workdir", str(tmp_path), "--json", "--plain-cpu"))
    assert plain["device"] == "cpu"
    assert plain["groups"][0]["model"]["fused_ops_before_pass"] == {}
    assert any("--plain-cpu" in note for note in plain["notes"])


@pytest.mark.slow
def test_the_real_npu_path_is_selected_and_timed_when_torch_npu_reports_a_device(cli, module_tree, tmp_path):
    stack = make_fake_real_stack(tmp_path / "stack")  # a stand-in that claims to be the real stack
    r = cli("verify", "--group", "WanRmsNormPatternGroup", "--repo", str(module_tree), "--workdir",
            str(tmp_path / "ws"), "--json", env={"PYTHONPATH": str(stack), "SDCOMPILE_NPU_DEVICE": "cpu",
                                                 "SDCOMPILE_CPU_REFERENCE_OPS": "1"})
    assert r.exit_code == 0, r.stderr
    report = _json(r)  # --json: stdout is exactly one JSON document
    assert report["device"] == "npu" and report["timing_note"] == "compiled vs eager timed on the NPU"
    assert "the real mindiesd package failed to import" in report["target_package"]
    timing = report["groups"][0]["unit"][0]["timing"]
    assert timing["iterations"] == 20 and timing["eager_ms"] > 0 and timing["compiled_ms"] > 0


@pytest.mark.slow
def test_phases_3_and_4_of_a_pair_act_on_what_its_scaffold_record_reused(cli, target, tmp_path):
    """A pair whose scaffold reused the target's groups has no group of its own: `register` has nothing to register
    (phase 3 skipped) and `verify --model --op` checks the groups the record names, in one report, as `run` does."""
    tree, ws = str(target.tree.root), str(tmp_path / "ws")
    scaffolded = _json(cli("scaffold", "--model", "flux", "--op", "rmsnorm", "--repo", tree, "--workdir", ws,
                           "--json"))
    assert scaffolded["decision"] == "reuse"
    covering = sorted({g for s in scaffolded["sites"] if s["need"] == "covered" for g in s["production"]["groups"]})
    assert covering
    registered = cli("register", "--model", "flux", "--op", "rmsnorm", "--repo", tree, "--workdir", ws)
    assert registered.exit_code == 0, registered.stderr
    assert f"INFO: nothing to register: scaffold reused {', '.join(covering)}" in registered.stdout
    assert registered.stdout.count("\n") < 8 and "diff" not in registered.stdout  # no edit, no empty table
    r = cli("verify", "--model", "flux", "--op", "rmsnorm", "--repo", tree, "--workdir", ws, "--json")
    report = _json(r)
    assert r.exit_code == 0, r.stderr
    assert sorted(g["group"] for g in report["groups"]) == covering
    assert all(g["model"]["replacements"] > 0 for g in report["groups"])
    assert report["pair"] == ["flux", "rmsnorm"]
    state = json.loads((tmp_path / "ws" / "flux" / "rmsnorm" / "state.json").read_text())
    assert state["phases"]["verify"]["verdict"] == "pass"
    assert state["phases"]["register"]["verdict"] == "skipped"


def test_verify_takes_several_groups_in_one_report(cli, module_tree, tmp_path):
    groups = ["WanRmsNormPatternGroup", "enable_rms_norm"]  # by name or by flag (RMSNormPatternGroup's)
    report = _json(cli("verify", *(a for g in groups for a in ("--group", g)), "--repo", str(module_tree),
                       "--workdir", str(tmp_path), "--json"))
    assert [g["group"] for g in report["groups"]] == ["WanRmsNormPatternGroup", "RMSNormPatternGroup"]
    assert all(g["unit"] for g in report["groups"])  # each group's own search functions ran
    missing = cli("verify", "--group", groups[0], "--group", "NoSuchPatternGroup", "--repo", str(module_tree),
                  "--workdir", str(tmp_path))
    assert missing.exit_code == 2 and "no pattern group 'NoSuchPatternGroup'" in missing.stderr
