"""run's phase 4 for a generated graph pass runs the pass's own test in a pytest process: that process keeps to
run's --timeout, and the command printed to rerun it says the same."""

from types import SimpleNamespace

import pytest

from sdcompile.lifecycle.steps import _graph_pass_test, graph_pass_test_command

TEST_FILE = '''
import os


def test_the_timeout_reached_this_process():
    assert os.environ.get("SDCOMPILE_TIMEOUT") == {expected!r}
'''


def _context(tmp_path, timeout):
    records = []
    ctx = SimpleNamespace(repo=tmp_path, run_dir=tmp_path, options=SimpleNamespace(plain_cpu=True, timeout=timeout),
                          say=lambda _text: None, record=lambda *args, **kwargs: records.append(args))
    facts = SimpleNamespace(file_of=lambda _what: "test_pass.py")
    return ctx, facts, records


@pytest.mark.torch_independent  # the step's environment
def test_the_graph_pass_test_keeps_to_runs_timeout(tmp_path, monkeypatch):
    monkeypatch.setenv("SDCOMPILE_TIMEOUT", "600")  # the environment's, which run's --timeout overrides
    (tmp_path / "test_pass.py").write_text(TEST_FILE.format(expected="42.5"))
    ctx, facts, records = _context(tmp_path, 42.5)
    step = _graph_pass_test(ctx, facts)
    assert step.verdict == "pass", (tmp_path / "graph_pass_test.log").read_text()
    assert records[0][:2] == ("verify", "pass")
    assert graph_pass_test_command(ctx, facts).startswith(f"cd {tmp_path} && SDCOMPILE_TIMEOUT=42.5 python -m pytest")


@pytest.mark.torch_independent  # the step's environment
def test_without_timeout_the_environments_stands(tmp_path, monkeypatch):
    monkeypatch.setenv("SDCOMPILE_TIMEOUT", "77")
    (tmp_path / "test_pass.py").write_text(TEST_FILE.format(expected="77"))
    ctx, facts, _ = _context(tmp_path, None)
    assert _graph_pass_test(ctx, facts).verdict == "pass", (tmp_path / "graph_pass_test.log").read_text()
    assert "SDCOMPILE_TIMEOUT" not in graph_pass_test_command(ctx, facts)


BACKEND = '''def graph_rewrite_after_freezing(fx_graph, inputs):
    return fx_graph
'''


def test_the_backend_edit_command_a_stopped_run_prints_applies_when_pasted(tmp_path, monkeypatch):
    """patch changes into -d before it reads -i, so the printed diff path must not be relative to where the user is."""
    import difflib
    import shlex
    import subprocess

    from sdcompile.lifecycle.steps import _graph_pass_switched_on

    tree, pair = tmp_path / "tree", tmp_path / "ws" / "pair"
    backend = tree / "mindiesd" / "compilation" / "mindie_sd_backend.py"
    backend.parent.mkdir(parents=True)
    (pair / "scaffold").mkdir(parents=True)
    backend.write_text(BACKEND)
    call = "    from .passes.x_pass import XGraphPass\n    XGraphPass()(fx_graph)\n"
    edited = BACKEND.replace("    return", call + "    return")
    rel = "mindiesd/compilation/mindie_sd_backend.py"
    (pair / "scaffold" / "backend.diff").write_text("".join(difflib.unified_diff(
        BACKEND.splitlines(keepends=True), edited.splitlines(keepends=True), f"a/{rel}", f"b/{rel}")))
    monkeypatch.chdir(tmp_path / "ws")  # where run was started: its paths are printed relative to it
    records = []
    ctx = SimpleNamespace(tree=SimpleNamespace(backend_file=backend), pair_dir=pair, repo=tree,
                          record=lambda *args, **kwargs: records.append(args))
    step = _graph_pass_switched_on(ctx, SimpleNamespace(graph_pass_class="XGraphPass"))
    assert step.verdict == "fail" and records[0][:2] == ("register", "fail")
    (command,) = step.next_commands
    argv = shlex.split(command, comments=True)
    assert argv[0] == "patch", command
    proc = subprocess.run(argv, cwd=tmp_path / "ws", capture_output=True, text=True)
    assert proc.returncode == 0, (command, proc.stdout, proc.stderr)
    assert backend.read_text() == edited
    assert _graph_pass_switched_on(ctx, SimpleNamespace(graph_pass_class="XGraphPass")).verdict == "pass"
