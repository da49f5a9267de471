"""Two commands editing one tree at once: the second waits for the first, or says who holds the tree (exit 2)."""

import os
import subprocess
import sys
import time

from register_helpers import FLUX_RMSNORM_PATTERN, write_pattern

from sdcompile.core.target.discovery import find_target
from sdcompile.core.target.registry import read_target_registry

# Holds the tree's lock in the commit (at its "committing" step) until the file named by argv[1] is removed.
HOLD_AT_COMMIT = """
import os, sys, time
from pathlib import Path
import sdcompile.util.fs_transaction as tx
from sdcompile.cli.app import main

gate = Path(sys.argv[1])

def hold(step):
    if step == "committing":
        gate.write_text(str(os.getpid()))
        while gate.exists():
            time.sleep(0.05)

tx.step_hook = hold
sys.argv = ["sdcompile", *sys.argv[2:]]
main()
"""


def register_cmd(target, tmp_path, model):
    return ["register", "--repo", str(target), "--model", model, "--op", "rmsnorm", "--workdir", str(tmp_path / "ws")]


def start_holder(target, tmp_path, gate):
    args = [sys.executable, "-c", HOLD_AT_COMMIT, str(gate), *register_cmd(target, tmp_path, "flux")]
    holder = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not gate.exists():
        assert holder.poll() is None and time.monotonic() < deadline, holder.communicate()
        time.sleep(0.05)
    return holder


def second(target, tmp_path, timeout):
    env = {**os.environ, "SDCOMPILE_LOCK_TIMEOUT": str(timeout)}
    return subprocess.Popen([sys.executable, "-m", "sdcompile", *register_cmd(target, tmp_path, "qwen")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def test_a_second_register_gives_up_naming_the_holder(target, tmp_path):
    write_pattern(target, "qwen_rmsnorm_pattern", FLUX_RMSNORM_PATTERN.replace("FluxRmsNorm", "QwenRmsNorm"))
    gate = tmp_path / "holding"
    holder = start_holder(target, tmp_path, gate)
    try:
        out, err = second(target, tmp_path, 0.5).communicate(timeout=60)
    finally:
        gate.unlink()
    assert holder.wait(timeout=60) == 0
    pid = holder.pid
    assert err.strip().splitlines()[-1] == (
        f"error: {target} is being edited by pid {pid} (`sdcompile register --repo {target} --model flux --op rmsnorm "
        f"--workdir {tmp_path / 'ws'}`); nothing was changed — wait for that command to finish and run again")
    flags = [e.flag for e in read_target_registry(find_target(target)).entries]
    assert flags[-1] == "enable_flux_rmsnorm" and "enable_qwen_rmsnorm" not in flags


def test_two_registers_at_once_both_land(target, tmp_path):
    write_pattern(target, "qwen_rmsnorm_pattern", FLUX_RMSNORM_PATTERN.replace("FluxRmsNorm", "QwenRmsNorm"))
    gate = tmp_path / "holding"
    holder = start_holder(target, tmp_path, gate)
    waiting = second(target, tmp_path, 60)
    time.sleep(1.0)  # time for the second one to start and block on the lock
    assert waiting.poll() is None
    gate.unlink()
    assert holder.wait(timeout=60) == 0
    assert waiting.wait(timeout=60) == 0, waiting.communicate()
    flags = [e.flag for e in read_target_registry(find_target(target)).entries]
    assert flags[-2:] == ["enable_flux_rmsnorm", "enable_qwen_rmsnorm"]
