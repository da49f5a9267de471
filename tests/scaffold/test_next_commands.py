"""The next commands scaffold prints run as printed: pasted (shlex-split, comment dropped) from the folder scaffold
ran in, each parses (no exit 2) and does its job, and the ones after a generated pattern (register, verify, the
generated test) take it through phases 3 and 4 of the pair."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from sdcompile.util.command_line import CommandLine, SdcompileCommand


def _next_lines(stdout: str) -> list[str]:
    lines = stdout.splitlines()
    start = lines.index("next:") + 1
    steps = []
    for line in lines[start:]:
        if not line.startswith("  "):
            break
        steps.append(line.strip())
    return steps


def _run_as_printed(line: str, cwd: Path, cli):
    """Run one printed line as a shell would: sdcompile through its entry point, anything else in bash."""
    argv = shlex.split(line, comments=True)
    if argv[0] == "sdcompile":
        return cli(*argv[1:], cwd=cwd)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    env.pop("SDCOMPILE_REPO", None)
    proc = subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    return proc


@pytest.mark.torch_independent  # the printed commands; what phases 2-4 decide: test_flux_lifecycle.py
@pytest.mark.slow
def test_the_next_commands_of_a_reuse_and_of_a_generated_pattern_run_as_printed(target, tmp_path, cli):
    from sdcompile.workspace.store import Workspace

    cwd = tmp_path  # the tree is tmp_path/mindiesd-3.1.0: printed relative to the folder the command ran in
    out = cli("scaffold", "--model", "flux", "--op", "rmsnorm", "--repo", target.name, "--workdir", "ws", cwd=cwd)
    assert out.exit_code == 0, out.stderr[-2000:]
    steps = _next_lines(out.stdout)
    verify = [s for s in steps if s.startswith("sdcompile verify")]
    force = [s for s in steps if s.startswith("sdcompile scaffold")]
    assert verify and len(force) == 1, steps
    for line in verify:  # what the reuse found: the covering group's numerics, recorded as the pair's phase 4
        argv = shlex.split(line, comments=True)
        assert argv[argv.index("--op") + 1] == "rmsnorm" and argv[argv.index("--repo") + 1] == target.name
        assert argv[argv.index("--workdir") + 1] == "ws"
        done = _run_as_printed(line, cwd, cli)
        assert done.exit_code == 0, f"{line}\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
    state = Workspace(cwd / "ws").load_pair("flux", "rmsnorm")
    assert state.phases["verify"].verdict == "pass"
    assert state.next_phase() == "debug"  # a reuse has nothing to register

    generated = _run_as_printed(force[0], cwd, cli)  # --force: a pattern from the graph, and its own next commands
    assert generated.exit_code == 0, generated.stdout[-2000:] + generated.stderr[-2000:]
    steps = _next_lines(generated.stdout)
    assert [shlex.split(s)[:2] for s in steps] == [["sdcompile", "register"], ["sdcompile", "verify"],
                                                    ["cd", target.name]], steps
    for line in steps:
        done = _run_as_printed(line, cwd, cli)
        code = getattr(done, "exit_code", getattr(done, "returncode", None))
        assert code == 0, f"{line}\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
    state = Workspace(cwd / "ws").load_pair("flux", "rmsnorm")
    assert state.phases["register"].verdict == "pass" and state.phases["verify"].verdict == "pass"


def test_a_printed_command_reads_back_as_the_arguments_it_was_built_from(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    odd = tmp_path / "my tree; rm -rf x"
    cmd = SdcompileCommand("verify", model_file="my models/m.py:build", op="rmsnorm", groups=("G",), dtype="fp32",
                           plain_cpu=True, min_cosine=0.9921875, timeout=30.0, flags=("--force",), repo=odd,
                           workdir=Path("/elsewhere/ws"), comment="why")
    text = str(cmd)
    assert text.endswith("   # why")
    assert shlex.split(text, comments=True) == [
        "sdcompile", "verify", "--model-file", "my models/m.py:build", "--op", "rmsnorm", "--group", "G", "--dtype",
        "fp32", "--plain-cpu", "--min-cosine", "0.9921875", "--timeout", "30", "--force", "--repo",
        "my tree; rm -rf x", "--workdir", "/elsewhere/ws"]
    assert cmd.argv()[0] == "verify"
    line = str(CommandLine("python", ("-m", "pytest", "a b.py"), cd=odd, env=(("T", "1 2"),)))
    assert line == "cd 'my tree; rm -rf x' && T='1 2' python -m pytest 'a b.py'"


def test_the_tree_is_carried_when_a_pasted_command_would_not_find_it_again(mindiesd_tree, tmp_path, monkeypatch):
    from sdcompile.core.target.discovery import find_target

    monkeypatch.delenv("SDCOMPILE_REPO", raising=False)
    assert find_target(mindiesd_tree).repo_for_commands == mindiesd_tree.resolve()
    monkeypatch.setenv("SDCOMPILE_REPO", str(mindiesd_tree))
    assert find_target(None, cwd=tmp_path).repo_for_commands == mindiesd_tree.resolve()
    monkeypatch.delenv("SDCOMPILE_REPO")
    assert find_target(None, cwd=mindiesd_tree / "mindiesd").repo_for_commands is None  # found again from there


# ------------------------------------------------------------------ every decision's next steps parse as printed
def _parsed(line: str, cwd: Path) -> dict:
    """What the real CLI parses from a printed sdcompile line (nothing runs; a usage error would be exit 2)."""
    import typer.main

    from sdcompile.cli.app import app

    argv = shlex.split(line, comments=True)[1:]
    group = typer.main.get_command(app)
    parent = group.make_context("sdcompile", list(argv))
    command = group.get_command(parent, argv[0])
    assert command is not None, line
    params = command.make_context(argv[0], list(argv[1:]), parent=parent).params
    return {k: (cwd / v if isinstance(v, Path) and not v.is_absolute() else v) for k, v in params.items()}


def _invocation(tmp_path: Path, **changes):
    from dataclasses import replace

    from sdcompile.phases.scaffold.next_steps import Invocation

    base = Invocation(model=None, model_file="my models/m.py:build", op="rmsnorm", dtypes=("fp32", "bf16"),
                      plain_cpu=True, path="auto", name="mine", word="mine", timeout=30.0,
                      repo=tmp_path / "tree", workdir=tmp_path / "ws", tree_root=tmp_path / "tree",
                      pair_dir=tmp_path / "ws" / "m-build" / "rmsnorm")
    return replace(base, **changes)


@pytest.mark.parametrize("decision", ["reuse", "graph entry can", "dead end", "dead end on graph-entry",
                                      "dead end on graph-pass", "already fused", "generate", "generate (dry run)",
                                      "generate entries", "generate a pass"])
def test_each_decision_prints_next_steps_that_carry_the_options_and_parse(decision, tmp_path, monkeypatch):
    from types import SimpleNamespace as NS

    from sdcompile.phases.scaffold.next_steps import next_steps

    monkeypatch.chdir(tmp_path)
    path = {"graph entry can": "replacement", "dead end on graph-entry": "graph-entry",
            "dead end on graph-pass": "graph-pass", "generate a pass": "graph-pass"}.get(decision, "auto")
    run = _invocation(tmp_path, path=path)
    rows = (NS(production=NS(groups=("GroupA",)), graph_pass_can_match=decision == "graph entry can",
               need="cannot generate" if "dead end" in decision else "covered"),)
    names = NS(group="MineRmsNormPatternGroup", flag="enable_mine_rmsnorm", module="mine_rmsnorm_pattern")
    variants, files = {
        "generate entries": ((NS(path="graph-entry"),), (NS(kind="graph entries test", path="tests/e.py"),)),
        "generate a pass": ((NS(path="graph-pass"),), (NS(kind="graph pass test", path="tests/g.py"),)),
    }.get(decision, ((NS(path="replacement"),), (NS(kind="pattern test", path="tests/p.py"),)))
    kind = {"graph entry can": "cannot generate", "dead end": "cannot generate", "dead end on graph-entry":
            "cannot generate", "dead end on graph-pass": "cannot generate", "generate (dry run)": "generate",
            "generate entries": "generate", "generate a pass": "generate"}.get(decision, decision)
    steps = next_steps(run, kind, variants, files, rows, names, written=decision != "generate (dry run)",
                       dry_run=decision == "generate (dry run)")
    assert steps
    sdcompile = [s for s in steps if s.startswith("sdcompile ")]
    for line in sdcompile:
        params = _parsed(line, tmp_path)
        if params.get("op") is None:
            continue
        # a command of the pair: on scaffold's tree and workspace, with the options scaffold ran with
        assert params["repo"] == tmp_path / "tree" and params["workdir"] == tmp_path / "ws"
        if "model_file" in params:  # those that build the model (register takes only the names' word)
            assert params["model_file"] == "my models/m.py:build" and params["timeout"] == 30.0
            assert params["plain_cpu"]
    others = [s for s in steps if not s.startswith("sdcompile ")]
    # patch's -i is absolute: patch reads it after changing into -d's folder
    diff = shlex.quote(str(tmp_path / "ws/m-build/rmsnorm/scaffold/backend.diff"))
    assert all(s.startswith(("cd tree && python -m pytest", f"patch -d tree -p1 -i {diff} ")) for s in others), others
    first = shlex.split(steps[0], comments=True)
    commands = [shlex.split(s, comments=True)[:2] for s in steps]
    if decision == "reuse":
        assert first[:2] == ["sdcompile", "verify"] and _parsed(steps[0], tmp_path)["group"] == ["GroupA"]
        assert _parsed(steps[-1], tmp_path)["force"] and _parsed(steps[-1], tmp_path)["dtype"] == "fp32,bf16"
    elif decision == "graph entry can":  # a forced --path replacement refused what an entry can hold
        assert _parsed(steps[0], tmp_path)["path"] == "graph-entry" and len(steps) == 1
    elif decision.startswith("dead end"):
        guide = {"dead end on graph-pass": "custom-graph-pass", "dead end on graph-entry": "graph-pattern-entry"}.get(
            decision, "pattern-templates")
        assert shlex.split(steps[-1], comments=True) == ["sdcompile", "explain", guide] and "dead end" in steps[-1]
        assert (Path(__file__).resolve().parents[2] / "docs" / f"{guide}.md").is_file()
    elif decision == "already fused":
        assert _parsed(steps[0], tmp_path)["plain_cpu"]
    elif decision == "generate entries":  # the carrier's flag and call, verify selecting it by its flag, its test
        assert commands == [["sdcompile", "register"], ["sdcompile", "verify"], ["cd", "tree"]]
        assert _parsed(steps[1], tmp_path)["group"] == ["enable_mine_rmsnorm"]
    elif decision == "generate a pass":  # asked for: the backend edit and its test, no registration
        assert commands == [["patch", "-d"], ["cd", "tree"]]
    else:  # register with the names --name chose, verify of that group, the generated test
        dry = decision.endswith("(dry run)")
        assert commands[dry:] == [["sdcompile", "register"], ["sdcompile", "verify"], ["cd", "tree"]]
        registered = _parsed(steps[dry], tmp_path)
        assert registered["model"] == "mine" and registered["op"] == "rmsnorm"
        assert _parsed(steps[dry + 1], tmp_path)["group"] == ["MineRmsNormPatternGroup"]
        if dry:  # first write what the dry run showed: the same scaffold without --dry-run
            written = _parsed(steps[0], tmp_path)
            assert not written["dry_run"] and written["name"] == "mine" and "once written" in steps[1]


def test_names_chosen_beside_the_targets_own_are_spelled_out_for_register_and_verify(tmp_path, monkeypatch):
    """`scaffold --model wan --op rope` writes WanGenRopePatternGroup (the derived names are MindIE-SD's own): register
    records under the pair wan/rope with the three names given, verify names the group."""
    from types import SimpleNamespace as NS

    from sdcompile.phases.scaffold.next_steps import next_steps

    monkeypatch.chdir(tmp_path)
    run = _invocation(tmp_path, model="wan", model_file=None, name=None, word="wan_gen", pair_model="wan",
                      pair_dir=tmp_path / "ws" / "wan" / "rope", op="rope")
    names = NS(flag="enable_wan_gen_rope", group="WanGenRopePatternGroup", module="wan_gen_rope_pattern")
    steps = next_steps(run, "generate", (NS(path="replacement"),), (NS(kind="pattern test", path="tests/p.py"),),
                       (), names, written=True, dry_run=False)
    registered, verified = (_parsed(s, tmp_path) for s in steps[:2])
    assert (registered["model"], registered["op"], registered["flag"], registered["group"], registered["module"]) == (
        "wan", "rope", "enable_wan_gen_rope", "WanGenRopePatternGroup", "wan_gen_rope_pattern")
    assert (verified["model"], verified["group"]) == ("wan", ["WanGenRopePatternGroup"])
