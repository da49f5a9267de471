"""One `sdcompile run` at a time per workspace pair (sdcompile/workspace/locks.py): a second one waits
$SDCOMPILE_LOCK_TIMEOUT seconds, then exits 2 with one line naming the holder's pid and command, having changed
nothing; once the holder is done it proceeds. So two runs never build one scratch copy at once or write two profile
folders per side (which integrate would read as two ranks).

The runs are real `python -m sdcompile run` processes on a model file whose build() waits at a sync point the test
releases; the build then fails (exit 2, nothing compiled), which keeps every test fast."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sdcompile.workspace.locks import PAIR_HOLDER, pair_folder_of, pair_lock
from sdcompile.workspace.store import Workspace

# the workspace's locks: the same on every torch (the second torch skips it)
pytestmark = pytest.mark.torch_independent

REPO_ROOT = Path(__file__).resolve().parents[2]
BLOCKING_MODEL = '''
import os
import pathlib
import time


def build():
    sync = pathlib.Path(os.environ["SYNC_DIR"])
    (sync / f"started-{os.getpid()}").write_text("")
    deadline = time.time() + 300
    while not (sync / "release").exists() and time.time() < deadline:
        time.sleep(0.05)
    raise RuntimeError("the test model is released")
'''


def _env(sync: Path, timeout: float) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SDCOMPILE_REPO", "SDCOMPILE_WORKDIR")}
    return {**env, "COLUMNS": "200", "SYNC_DIR": str(sync), "SDCOMPILE_LOCK_TIMEOUT": str(timeout)}


def _run(tmp_path: Path, timeout: float) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "sdcompile", "run", "--model-file", "blocking.py:build", "--name", "blocking",
         "--workdir", "ws"],
        cwd=tmp_path, env=_env(tmp_path / "sync", timeout), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(condition, seconds: float = 240) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the sync point was not reached")
        time.sleep(0.05)


@pytest.fixture
def blocking(tmp_path) -> Path:
    (tmp_path / "blocking.py").write_text(BLOCKING_MODEL)
    (tmp_path / "sync").mkdir()
    return tmp_path


def _pair(tmp_path: Path) -> Path:
    return Workspace(tmp_path / "ws").pair_dir("blocking-build", "rmsnorm", create=False)


def test_a_run_on_a_pair_another_command_holds_exits_2_naming_it(blocking, cli):
    pair = _pair(blocking)
    with pair_lock(pair):
        started = time.monotonic()
        out = cli("run", "--model-file", str(blocking / "blocking.py:build"), "--name", "blocking", "--workdir",
                  str(blocking / "ws"), cwd=blocking, env={"SDCOMPILE_LOCK_TIMEOUT": "1", "SYNC_DIR": "unused"})
        waited = time.monotonic() - started
    assert out.exit_code == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert f"{pair} is in use by pid {os.getpid()} (`sdcompile" in lines[0]  # its argv: a test process's own
    assert "nothing was changed" in lines[0] and "wait for that command to finish" in lines[0]
    assert waited >= 1.0  # it waited for the lock before giving up
    assert not (pair / "run").exists()  # no scratch copy, no memory: nothing was touched
    assert not (pair / PAIR_HOLDER).exists()  # released with the block


def test_two_runs_of_one_pair_take_turns(blocking):
    sync = blocking / "sync"
    first = _run(blocking, timeout=10)
    impatient = patient = None
    try:
        _wait_for(lambda: (sync / f"started-{first.pid}").exists())  # the first run holds the pair, in phase 1
        impatient = _run(blocking, timeout=0.5)
        out, err = impatient.communicate(timeout=240)
        assert impatient.returncode == 2, err
        assert len(err.strip().splitlines()) == 1, err
        assert f"is in use by pid {first.pid} (`sdcompile run --model-file blocking.py:build --name blocking " \
               "--workdir ws`)" in err
        assert not any(sync.glob(f"started-{impatient.pid}"))  # it never reached the model

        patient = _run(blocking, timeout=240)  # waits while the first run works
        time.sleep(1.0)
        assert patient.poll() is None and not any(sync.glob(f"started-{patient.pid}"))
        (sync / "release").write_text("")
        _, first_err = first.communicate(timeout=240)
        _, patient_err = patient.communicate(timeout=240)
    finally:
        for proc in (first, impatient, patient):
            if proc is not None and proc.poll() is None:
                proc.kill()
    for code, err in ((first.returncode, first_err), (patient.returncode, patient_err)):
        assert code == 2 and "the test model is released" in err, err  # both reached their model, in turn
    assert "is in use" not in patient_err
    run_dir = _pair(blocking) / "run"
    assert sorted(p.name for p in run_dir.iterdir()) == ["mindiesd-3.1.0", "run.json"]  # one scratch copy, no leftovers


def test_profile_into_a_pair_folder_takes_the_pair_lock(tmp_path, cli):
    ws = Workspace(tmp_path / "ws")
    ws.record("flux", "rmsnorm", "analyze", "pass", "located")
    pair = ws.pair_dir("flux", "rmsnorm")
    out_dir = pair / "run" / "profiles" / "eager"
    assert pair_folder_of(out_dir) == pair and pair_folder_of(tmp_path) is None
    with pair_lock(pair):
        out = cli("profile", "--model", "flux", "--mode", "eager", "--out", str(out_dir), cwd=tmp_path,
                  env={"SDCOMPILE_LOCK_TIMEOUT": "0.2"})
    assert out.exit_code == 2, out.stderr
    assert f"{pair} is in use by pid {os.getpid()}" in out.stderr
    assert not out_dir.exists()


def test_the_pair_lock_is_reentrant_within_a_process(tmp_path):
    pair = tmp_path / "flux" / "rmsnorm"
    # run holds it, then its phase 6 profiles into the pair's folder (found from --out, spelled another way)
    with pair_lock(pair), pair_lock(tmp_path / "flux" / ".." / "flux" / "rmsnorm"):
        assert (pair / PAIR_HOLDER).is_file()
    assert not (pair / PAIR_HOLDER).exists()
