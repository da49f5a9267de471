"""What the benchmarks that time whole commands share: one `sdcompile` command, timed from outside its process."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path


def sdcompile(cwd: Path, *args: str) -> float:
    """Seconds `sdcompile ARGS` took in `cwd`; a command that fails ends the benchmark, naming it."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "sdcompile", *args], cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"sdcompile {' '.join(args)} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return time.perf_counter() - t0
