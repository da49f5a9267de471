"""What running the target's NPU branch costs: the same commands with the tree's Triton kernels under Triton's
interpreter (and every fused call judged on them) against the tree's CPU fallback (SDCOMPILE_NPU_KERNELS=0, what
sdcompile ran before it ran the NPU's kernels). Measured in this one run, each side in a fresh folder:

    verify --all-groups                    NPU kernels / CPU fallback   target <= 2.0
    run --model flux --op rmsnorm          NPU kernels / CPU fallback   target <= 2.0
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET = 2.0
COMMANDS = {
    "verify --all-groups": ("verify", "--all-groups", "--repo", "tree"),
    "run --model flux --op rmsnorm": ("run", "--model", "flux", "--op", "rmsnorm"),
}


def timed(cwd: Path, args: tuple[str, ...], kernels: str) -> float:
    env = {**os.environ, "SDCOMPILE_NPU_KERNELS": kernels}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "sdcompile", *args], cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode not in (0, 1):  # a verdict either way; anything else is a broken benchmark
        raise SystemExit(f"sdcompile {' '.join(args)} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return time.perf_counter() - t0


def main() -> int:
    ok = True
    with tempfile.TemporaryDirectory(prefix="sdcompile-bench-") as tmp:
        for name, args in COMMANDS.items():
            seconds = {}
            for kernels in ("0", "1"):
                cwd = Path(tmp) / f"{name.split()[0]}-{kernels}"
                cwd.mkdir()
                subprocess.run([sys.executable, "-m", "sdcompile", "fetch-target", "tree"], cwd=cwd,
                               capture_output=True, check=True)
                seconds[kernels] = timed(cwd, args, kernels)
            ratio = seconds["1"] / seconds["0"]
            ok &= ratio <= TARGET
            print(f"npu_kernels: {name}: CPU fallback {seconds['0']:.1f} s | NPU kernels {seconds['1']:.1f} s "
                  f"= {ratio:.2f} (target <= {TARGET}) {'OK' if ratio <= TARGET else 'OVER'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
