"""A `sdcompile run` killed while it writes its scratch copy or a profile: the next run removes what the killed one
left, rebuilds its own folders and goes on, instead of refusing the half-written copy ("is not a MindIE-SD tree") or
the half-written profile ("holds profiler output sdcompile did not write").

The partial states are the ones a kill leaves: made by SIGKILLing a real run at a sync point (a copy hook, the
profile's step hook), and, for workspaces an older sdcompile left that way, built by hand."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sdcompile.core.profiles.locate import CAPTURE_INFO, COMPLETE_MARKER, KERNEL_FILE, OUTPUT_DIR, STAGING_PREFIX
from sdcompile.lifecycle.target import SCRATCH_MARKER, run_target

# the workspace's recovery after a kill: the same on every torch (the second torch skips it)
pytestmark = pytest.mark.torch_independent

FAILING_MODEL = "def build():\n    raise RuntimeError('the test model stops the run here')\n"
COPY = "mindiesd-3.1.0"


def _killed_run(cwd: Path, setup: str, *args: str) -> subprocess.CompletedProcess:
    """`sdcompile ARGS` in a fresh process that SIGKILLs itself (`die()`) where `setup`, run first, says."""
    script = ("import os, runpy, signal, sys\n"
              "def die(*_):\n    os.kill(os.getpid(), signal.SIGKILL)\n"
              + textwrap.dedent(setup) +
              "\nsys.argv = ['sdcompile', *sys.argv[1:]]\nrunpy.run_module('sdcompile', run_name='__main__')\n")
    env = {k: v for k, v in os.environ.items() if k not in ("SDCOMPILE_REPO", "SDCOMPILE_WORKDIR")}
    return subprocess.run([sys.executable, "-c", script, *args], cwd=cwd, env={**env, "COLUMNS": "200"},
                          capture_output=True, text=True, timeout=600)


def _leftovers(run_dir: Path) -> list[str]:
    return sorted(p.name for p in run_dir.iterdir() if p.name.startswith("."))


# ------------------------------------------------------------------------------------------------ scratch copy
def test_a_run_killed_during_its_scratch_copy_is_followed_by_one_that_remakes_it(tmp_path, cli, mindiesd_cache):
    (tmp_path / "m.py").write_text(FAILING_MODEL)
    args = ("run", "--model-file", "m.py:build", "--name", "m", "--workdir", "ws")
    # SIGKILL after 40 files of the copy: a half-copied tree, as a kill leaves it
    killed = _killed_run(tmp_path, """
        import shutil
        copy2, copied = shutil.copy2, []
        def counting(src, dst, **kw):
            copied.append(src)
            if len(copied) == 40:
                die()
            return copy2(src, dst, **kw)
        shutil.copy2 = counting
    """, *args)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    run_dir = tmp_path / "ws" / "m-build" / "rmsnorm" / "run"
    assert _leftovers(run_dir) == [f".{COPY}.staging-{_pid_of(run_dir)}"]  # half-copied, under its staging name
    assert not (run_dir / COPY).exists()

    again = cli(*args, cwd=tmp_path)
    assert again.exit_code == 2 and "the test model stops the run here" in again.stderr, again.stderr
    assert "is not a MindIE-SD tree" not in again.stderr
    assert _leftovers(run_dir) == []
    assert (run_dir / COPY / SCRATCH_MARKER).is_file()
    _assert_complete_copy(run_dir / COPY, mindiesd_cache)


def _pid_of(run_dir: Path) -> str:
    (staging,) = run_dir.glob(f".{COPY}.staging-*")
    return staging.name.rpartition("-")[2]


def _assert_complete_copy(copy: Path, cache: Path) -> None:
    missing = [str(p.relative_to(cache)) for p in cache.rglob("*") if not (copy / p.relative_to(cache)).exists()]
    assert missing == []


def test_a_half_copied_tree_an_older_sdcompile_left_is_remade(tmp_path, mindiesd_cache):
    run_dir = tmp_path / "run"
    dest = run_dir / COPY
    shutil.copytree(mindiesd_cache / "mindiesd" / "compilation", dest / "mindiesd" / "compilation")  # cut short
    (run_dir / f".{COPY}.old-999999").mkdir()  # set aside by a run killed before it removed it
    target = run_target(None, run_dir, restart=False)
    assert target.fresh and target.source.startswith("a fresh scratch copy")
    assert target.tree.root == dest and (dest / SCRATCH_MARKER).is_file()
    _assert_complete_copy(dest, mindiesd_cache)
    assert _leftovers(run_dir) == []


def test_a_complete_copy_is_kept_with_or_without_its_marker(tmp_path, mindiesd_cache):
    run_dir = tmp_path / "run"
    first = run_target(None, run_dir, restart=False)
    edited = first.tree.root / "mindiesd" / "compilation" / "patterns" / "mine.py"
    edited.write_text("# scaffold's file\n")
    assert not run_target(None, run_dir, restart=False).fresh and edited.is_file()
    (first.tree.root / SCRATCH_MARKER).unlink()  # a complete copy an older sdcompile made
    kept = run_target(None, run_dir, restart=False)
    assert not kept.fresh and edited.is_file() and (first.tree.root / SCRATCH_MARKER).is_file()
    restarted = run_target(None, run_dir, restart=True)
    assert restarted.fresh and not edited.exists() and _leftovers(run_dir) == []


def test_an_interrupted_replacement_keeps_the_copy_it_was_replacing(tmp_path, monkeypatch, mindiesd_cache):
    import sdcompile.lifecycle.target as target_module

    run_dir = tmp_path / "run"
    first = run_target(None, run_dir, restart=False)
    mine = first.tree.root / "mindiesd" / "compilation" / "patterns" / "mine.py"
    mine.write_text("# scaffold's file\n")

    def interrupt(step: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(target_module, "step_hook", interrupt)
    with pytest.raises(KeyboardInterrupt):
        run_target(None, run_dir, restart=True)
    assert mine.is_file() and _leftovers(run_dir) == []


# --------------------------------------------------------------------------------------------------- profiles
def test_a_profile_killed_before_it_is_complete_leaves_no_rank_and_the_next_one_proceeds(tmp_path, cli):
    from sdcompile.core.profiles.locate import locate
    from sdcompile.util.errors import BadInput

    out = tmp_path / "eager"
    args = ("profile", "--model", "flux", "--mode", "eager", "--out", str(out))
    killed = _killed_run(tmp_path, "import sdcompile.core.profiles.capture as capture\ncapture.step_hook = die",
                         *args)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    (staging,) = out.iterdir()  # every file written, the marker too, but not renamed into place
    assert staging.name.startswith(STAGING_PREFIX) and (staging / COMPLETE_MARKER).is_file()
    with pytest.raises(BadInput, match="no ASCEND_PROFILER_OUTPUT"):
        locate(out)  # a staging folder is never read as a rank

    again = cli(*args, cwd=tmp_path)  # no --force: what was left is not a profile
    assert again.exit_code == 0, again.stderr
    (run,) = out.iterdir()
    assert run.name.endswith("_ascend_pt") and (run / COMPLETE_MARKER).is_file() and (run / CAPTURE_INFO).is_file()
    assert len(locate(out).ranks) == 1


def test_profile_folders_a_killed_run_left_in_its_own_profiles_are_cleared(tmp_path):
    from sdcompile.lifecycle.run_profiles import empty_own_folder

    eager = tmp_path / "run" / "profiles" / "eager"
    cut = eager / "flux-eager-cpu_4242_20260101000000000_ascend_pt" / OUTPUT_DIR  # an older sdcompile, killed
    cut.mkdir(parents=True)
    (cut / KERNEL_FILE).write_text("Step Id,Name\r\n1,aten::mm")
    (eager / f"{STAGING_PREFIX}4242-x_ascend_pt").mkdir()
    empty_own_folder(eager)
    assert not eager.exists()
    empty_own_folder(eager)  # nothing there: nothing to do


def test_the_standalone_profile_still_refuses_output_it_did_not_write(tmp_path, cli):
    out = tmp_path / "eager"
    foreign = out / "host_1_20260101000000000_ascend_pt" / OUTPUT_DIR
    foreign.mkdir(parents=True)
    (foreign / KERNEL_FILE).write_text("Name,Type\r\n")
    dead_staging = out / f"{STAGING_PREFIX}{_dead_pid()}-flux_ascend_pt"
    dead_staging.mkdir()
    result = cli("profile", "--model", "flux", "--mode", "eager", "--out", str(out), "--force", cwd=tmp_path)
    assert result.exit_code == 2
    assert "holds profiler output sdcompile did not write (host_1_20260101000000000_ascend_pt)" in result.stderr
    assert foreign.is_dir() and not dead_staging.exists()


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", ""])
    proc.wait()
    return proc.pid


@pytest.mark.slow
def test_a_run_killed_while_phase_6_writes_a_profile_is_followed_by_one_that_passes(tmp_path, cli):
    import json

    from sdcompile.core.profiles.locate import locate

    args = ("run", "--model", "flux", "--op", "rmsnorm", "--workdir", "ws")
    killed = _killed_run(tmp_path, "import sdcompile.core.profiles.capture as capture\ncapture.step_hook = die", *args)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    assert "phase 5 debug: pass" in killed.stderr  # killed in phase 6, its eager profile complete but not in place
    profiles = tmp_path / "ws" / "flux" / "rmsnorm" / "run" / "profiles"
    (staging,) = (profiles / "eager").iterdir()
    assert staging.name.startswith(STAGING_PREFIX)
    # and what an older sdcompile, killed there, left: a run folder without its capture note
    cut = profiles / "eager" / "flux-eager-cpu_4242_20260101000000000_ascend_pt" / OUTPUT_DIR
    cut.mkdir(parents=True)
    (cut / KERNEL_FILE).write_text("Step Id,Device_id,Name,Type\r\n1,0,aten::mm")

    again = cli(*args, "--json", cwd=tmp_path)
    assert again.exit_code == 0, again.stderr[-3000:]
    result = json.loads(again.stdout)
    assert [p["status"] for p in result["phases"]] == ["kept"] * 5 + ["pass", "pass"]
    for side in ("eager", "compile"):
        (run,) = (profiles / side).iterdir()  # one profile per side, read as one rank
        assert run.name.endswith("_ascend_pt") and (run / COMPLETE_MARKER).is_file()
        assert len(locate(profiles / side).ranks) == 1
