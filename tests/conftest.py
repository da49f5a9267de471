"""Shared fixtures: the real MindIE-SD tree (fetched once, copied fresh per test) and a CLI runner."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]

# A suite started as a background job (`make test &`, some CI runners) inherits SIGINT ignored, and so would every
# command it starts: Ctrl-C could not be tested. Python's own handler restores what a terminal gives, here and (a
# caught signal is reset by exec) in each process a test starts.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def mindiesd_cache() -> Path:
    """The unpacked mindiesd==3.1.0 wheel in the package cache (downloaded on first use)."""
    from sdcompile.core.target.package_cache import ensure_unpacked

    return ensure_unpacked()


@pytest.fixture
def mindiesd_tree(mindiesd_cache, tmp_path) -> Path:
    """A fresh, editable copy of the real MindIE-SD 3.1.0 tree (the folder holding mindiesd/)."""
    from sdcompile.core.target.package_cache import scratch_copy

    return scratch_copy(tmp_path / "mindiesd-3.1.0")


RAISES = "replacement broken on purpose"


@pytest.fixture
def raising_tree(mindiesd_tree) -> Path:
    """The tree with WanRmsNormPatternGroup's replacement raising ValueError(RAISES) when the group replaces a match:
    a group failing inside the target's backend."""
    pattern = mindiesd_tree / "mindiesd/compilation/patterns/wan_rmsnorm_pattern.py"
    text = pattern.read_text()
    marker = "            def func(x, weight):\n                # npu_rms_norm"
    assert marker in text
    pattern.write_text(text.replace(marker, f"            raise ValueError({RAISES!r})\n" + marker))
    return mindiesd_tree


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str
    # shared_cli: the run-result.json files under the folder as this command left them (workspace-relative path ->
    # text), since a later command in the same folder (a rerun with --json) rewrites them
    files: dict[str, str] = field(default_factory=dict)


def run_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 600) -> CliResult:
    """Run `python -m sdcompile ARGS` in a fresh process: the real entry point, real stdout/stderr split."""
    full_env = {**os.environ, "COLUMNS": "200", **(env or {})}
    full_env.pop("SDCOMPILE_REPO", None) if env is None or "SDCOMPILE_REPO" not in env else None
    proc = subprocess.run(
        [sys.executable, "-m", "sdcompile", *args],
        cwd=cwd or REPO_ROOT,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def cli():
    return run_cli


# The emulated NPU (or the real one) is active before any test module imports diffusers; see docs/npu-emulation.md.
pytest_plugins = ["sdcompile.testing.pytest_plugin"]


# --- `sdcompile` commands shared by several test directories (tests/run, tests/docs) ---------------------------------
# pytest-xdist may put tests using one session fixture on both workers, so the result is computed once per test run
# under a file lock in the run's shared base temp (as tests/analyze/conftest.py does).
def _shared_root(tmp_path_factory) -> Path:
    base = tmp_path_factory.getbasetemp()
    return base.parent if base.name.startswith("popen-gw") else base


@pytest.fixture(scope="session")
def shared_cli(tmp_path_factory):
    """`shared_cli(folder, *args)` runs `sdcompile ARGS` once per test run in the folder `<shared>/<folder>` (a fresh
    current directory, no $SDCOMPILE_REPO or $SDCOMPILE_WORKDIR: the defaults a user gets) and returns
    (CliResult, folder). Later calls with the same folder and arguments get the recorded result. `prepare(folder)`
    runs first, once, when the command does."""
    import hashlib
    import json

    from sdcompile.util.fsutil import exclusive_lock

    root = _shared_root(tmp_path_factory) / "shared-cli"
    root.mkdir(parents=True, exist_ok=True)

    def once(folder: str, *args: str, prepare=None) -> tuple[CliResult, Path]:
        cwd = root / folder
        cwd.mkdir(exist_ok=True)
        record = cwd / f".result-{hashlib.sha256(json.dumps(args).encode()).hexdigest()[:12]}.json"
        with exclusive_lock(root / f"{folder}.lock"):
            if record.is_file():
                return CliResult(**json.loads(record.read_text())), cwd
            if prepare is not None:
                prepare(cwd)
            env = {k: v for k, v in os.environ.items() if k not in ("SDCOMPILE_REPO", "SDCOMPILE_WORKDIR")}
            proc = subprocess.run([sys.executable, "-m", "sdcompile", *args], cwd=cwd, capture_output=True, text=True,
                                  env={**env, "COLUMNS": "200"}, timeout=900)
            left = {str(f.relative_to(cwd)): f.read_text(encoding="utf-8")
                    for f in sorted(cwd.glob(".sdcompile/*/*/run/run-result.json"))}
            result = CliResult(proc.returncode, proc.stdout, proc.stderr, left)
            record.write_text(json.dumps(result.__dict__))
            return result, cwd

    return once
