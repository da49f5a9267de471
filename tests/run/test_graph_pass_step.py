"""A custom graph pass (scaffold --path graph-pass, only on request: upstream forbids them) is checked by the phases
themselves, so the standalone commands do what `run` does: `register` checks that the backend calls the pass (and
prints the patch that makes the edit, which applies when pasted), `verify` runs the pass's generated test in a pytest
process that keeps to --timeout."""

import shlex
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from sdcompile.core.target.edits.backend_pass import ensure_pass_call
from sdcompile.core.target.naming import registration_names
from sdcompile.phases.verify.graph_pass import run_graph_pass_test
from sdcompile.util.text_diff import unified_diff

TEST_FILE = '''
import os


def test_the_timeout_reached_this_process():
    assert os.environ.get("SDCOMPILE_TIMEOUT") == {expected!r}
'''
NAMES = registration_names("mine", "rmsnorm")


def _tree(root: Path) -> SimpleNamespace:
    test = root / NAMES.pass_test
    test.parent.mkdir(parents=True)
    return SimpleNamespace(root=root, passes_dir=root / "mindiesd" / "compilation" / "passes")


@pytest.mark.torch_independent  # the test process's environment
def test_verify_runs_the_pass_test_keeping_to_its_timeout(tmp_path, monkeypatch):
    monkeypatch.setenv("SDCOMPILE_TIMEOUT", "600")  # the environment's, which --timeout overrides
    tree = _tree(tmp_path)
    (tmp_path / NAMES.pass_test).write_text(TEST_FILE.format(expected="42.5"))
    tested = run_graph_pass_test(tree, NAMES, plain_cpu=True, timeout=42.5, log=tmp_path / "out" / "test.log")
    assert tested.passed, Path(tested.log).read_text()
    assert tested.pass_class == "MineRmsNormGraphPass" and "1 passed" in tested.last_line
    assert tested.command.startswith(f"cd {tmp_path} && SDCOMPILE_TIMEOUT=42.5 python -m pytest")


@pytest.mark.torch_independent  # the test process's environment
def test_without_timeout_the_environments_stands(tmp_path, monkeypatch):
    monkeypatch.setenv("SDCOMPILE_TIMEOUT", "77")
    tree = _tree(tmp_path)
    (tmp_path / NAMES.pass_test).write_text(TEST_FILE.format(expected="77"))
    tested = run_graph_pass_test(tree, NAMES, plain_cpu=True, timeout=None, log=tmp_path / "test.log")
    assert tested.passed and "SDCOMPILE_TIMEOUT" not in tested.command, Path(tested.log).read_text()


def test_register_checks_the_backend_calls_the_pass_and_its_patch_applies_when_pasted(mindiesd_tree, tmp_path, cli):
    """patch changes into -d before it reads -i, so the printed diff path must not be relative to where the user is."""
    passes = mindiesd_tree / "mindiesd" / "compilation" / "passes"
    (passes / f"{NAMES.pass_module}.py").write_text(f"class {NAMES.pass_class}:\n    def __call__(self, graph):\n"
                                                     "        return graph\n")
    backend = mindiesd_tree / "mindiesd" / "compilation" / "mindie_sd_backend.py"
    rel = "mindiesd/compilation/mindie_sd_backend.py"
    old = backend.read_bytes()
    ws = tmp_path / "ws"
    saved = ws / "mine" / "rmsnorm" / "scaffold" / "backend.diff"  # where scaffold keeps the edit it showed
    saved.parent.mkdir(parents=True)
    saved.write_text(unified_diff(old, ensure_pass_call(old, NAMES.pass_module, NAMES.pass_class, "mine", rel), rel))
    register = ("register", "--model", "mine", "--op", "rmsnorm", "--repo", str(mindiesd_tree), "--workdir", str(ws))

    missing = cli(*register, cwd=ws)
    assert missing.exit_code == 1, missing.stderr
    assert missing.stdout.rstrip().splitlines()[-1].startswith("FAIL: register MineRmsNormGraphPass: not called by")
    (command,) = [line.strip() for line in missing.stdout.splitlines() if line.strip().startswith("patch ")]
    proc = subprocess.run(shlex.split(command, comments=True), cwd=ws, capture_output=True, text=True)
    assert proc.returncode == 0, (command, proc.stdout, proc.stderr)
    assert backend.read_bytes() != old  # the edit, made by the user

    called = cli(*register, cwd=ws)
    assert called.exit_code == 0, called.stdout + called.stderr
    assert called.stdout.rstrip().splitlines()[-1] == "PASS: register MineRmsNormGraphPass: called by the backend"
    status = cli("status", "--workdir", str(ws), "--json", cwd=ws)
    assert '"register"' in status.stdout and '"verdict": "pass"' in status.stdout, status.stdout
