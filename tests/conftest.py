"""Shared fixtures: the real MindIE-SD tree (fetched once, copied fresh per test) and a CLI runner."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def mindiesd_cache() -> Path:
    """The unpacked mindiesd==3.1.0 wheel in the package cache (downloaded on first use)."""
    from sdcompile.target.package_cache import ensure_unpacked

    return ensure_unpacked()


@pytest.fixture
def mindiesd_tree(mindiesd_cache, tmp_path) -> Path:
    """A fresh, editable copy of the real MindIE-SD 3.1.0 tree (the folder holding mindiesd/)."""
    from sdcompile.target.package_cache import scratch_copy

    return scratch_copy(tmp_path / "mindiesd-3.1.0")


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str


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
pytest_plugins = ["sdcompile.npu.pytest_plugin"]
