"""Speed and memory of `sdcompile copy-audit --json` and `sdcompile integrate --json` on two generated
~1,000,000-row full-header kernel_details.csv files (46 columns, ~340 MB each), against the floor
`pandas.read_csv(engine="pyarrow", usecols=["Name", "Type", "Duration(us)"])` over both files, timed in the same run.

Each measurement runs in its own child process: the command is the CLI itself (in-process, its JSON document
written to /dev/null), timed inside the child after imports as the floor is (pandas there; the command's CLI and
phase modules here, and pandas too, which pyarrow imports on first use wherever it is installed), so what is timed
is the work: reading, computing, writing the document. Peak memory is that child's high-water mark. The three are
interleaved over ROUNDS rounds and the best time of each is kept, so load from other processes hits all of them
alike.
Targets: each command <= 1.5x the floor; peak memory <= 800 MB. The files are deleted afterwards.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROWS = 1_000_000
ROUNDS = 3
TIME_TARGET, MEMORY_TARGET_MB = 1.5, 800

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "profiles"))

CHILD = r"""
import contextlib, json, os, resource, sys, time
import pandas as pd
kind, eager, compiled = sys.argv[1], sys.argv[2], sys.argv[3]
if kind == "floor":
    def run():
        for path in (eager, compiled):
            pd.read_csv(path, engine="pyarrow", usecols=["Name", "Type", "Duration(us)"])
else:
    import importlib
    from sdcompile.cli.app import COMMANDS, app, build_command
    entry = next(e for e in COMMANDS if e.name == kind)
    build_command(entry)
    importlib.import_module(f"sdcompile.phases.{entry.module}.phase")
    args = [kind, eager, compiled, "--json"] + (["--op", "rmsnorm"] if kind == "integrate" else [])
    def run():
        with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
            try:
                app(args=args, prog_name="sdcompile")
            except SystemExit as exit:
                if exit.code not in (0, 1, None):
                    raise
t0 = time.perf_counter()
run()
best = time.perf_counter() - t0
# VmHWM, not ru_maxrss: ru_maxrss survives exec and would report the parent's peak (the file generator's)
hwm = [line for line in open("/proc/self/status") if line.startswith("VmHWM:")]
peak_kb = int(hwm[0].split()[1]) if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": best, "peak_mb": peak_kb / 1024}))
"""


def generate(path: Path, side: str, seed: int) -> None:
    """A full-header file (Step Id first, 46 columns) for a DiT-like run: layers of matmuls, norms, attention,
    copies; the compiled side fuses RMSNorm and launches more copies."""
    from make_fixtures import COMPILE_LAYER, EAGER_LAYER, FULL, SHAPES

    rng = random.Random(seed)
    layer = EAGER_LAYER if side == "eager" else COMPILE_LAYER
    sequence = [(n, t, c) for n, t, c, k in layer for _ in range(k)]
    metrics = ",".join(f"{rng.random() * 100:.2f}" for _ in range(len(FULL) - 22))
    shapes = ",".join(SHAPES[k] for k in SHAPES)
    start = 1718873628_000000_000
    lines = [",".join(FULL)]
    durations = [rng.randint(1_000, 90_000) for _ in range(4096)]
    for i in range(ROWS):
        name, op_type, core = sequence[i % len(sequence)]
        dur = durations[i & 4095]
        step = 1 + i // (ROWS // 4)
        lines.append(f"{step},0,1,{i & 65535},2,{name},{op_type},dynamic,{core},{start // 1000}.{start % 1000:03d}\t,"
                     f"{dur // 1000}.{dur % 1000:03d},0.120,40,0,NO,{shapes},N/A,{metrics}")
        start += dur + 1_500
    path.write_text("\r\n".join(lines) + "\r\n", encoding="utf-8")


def measure(kind: str, eager: Path, compiled: Path) -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD, kind, str(eager), str(compiled)],
                          capture_output=True, text=True, cwd=HERE.parent)
    if proc.returncode != 0:
        raise SystemExit(f"{kind} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="sdcompile-bench-") as tmp:
        eager, compiled = Path(tmp) / "eager.csv", Path(tmp) / "compile.csv"
        t0 = time.perf_counter()
        generate(eager, "eager", 1)
        generate(compiled, "compile", 2)
        size = (eager.stat().st_size + compiled.stat().st_size) / 2 / 1e6
        print(f"profiles_speed: generated 2 x {ROWS:,} rows, 46 columns, {size:.0f} MB each "
              f"in {time.perf_counter() - t0:.1f} s", flush=True)
        results: dict[str, dict] = {}
        for _ in range(ROUNDS):
            for kind in ("floor", "copy-audit", "integrate"):
                r = measure(kind, eager, compiled)
                best = results.setdefault(kind, r)
                best["seconds"] = min(best["seconds"], r["seconds"])
                best["peak_mb"] = max(best["peak_mb"], r["peak_mb"])
    floor = results["floor"]["seconds"]
    ok = True
    print(f"profiles_speed: floor pandas.read_csv(engine='pyarrow', usecols=[Name, Type, Duration(us)]) x2 = "
          f"{floor:.2f} s, peak {results['floor']['peak_mb']:.0f} MB")
    for kind in ("copy-audit", "integrate"):
        r = results[kind]
        ratio = r["seconds"] / floor
        fits = ratio <= TIME_TARGET and r["peak_mb"] <= MEMORY_TARGET_MB
        ok &= fits
        print(f"profiles_speed: {kind} --json (best of {ROUNDS} rounds) {r['seconds']:.2f} s = "
              f"{ratio:.2f}x floor "
              f"(target <= {TIME_TARGET}), peak {r['peak_mb']:.0f} MB (target <= {MEMORY_TARGET_MB}) "
              f"{'OK' if fits else 'OVER'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
