"""Cost of `sdcompile analyze --op all` against the floor every model-running command pays: a fresh process
that imports diffusers, builds the same tiny model and runs one forward.

Target: ratio <= 2 for every zoo model, on wall time. Both commands are timed in this one run, in fresh
processes, interleaved, best of N, so machine noise hits both; each analyze writes to its own fresh workspace
(nothing cached). The CPU-time ratio (user + sys of the child) is printed beside it: on a busy machine it shows the
cost without the waiting.

    python benchmarks/analyze_speed.py                  # every zoo model
    python benchmarks/analyze_speed.py flux wan --runs 3
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time

TARGET = 2.0

# The floor: the same device set-up analyze does (the emulated NPU when there is no real one), then import
# diffusers, build the zoo model and run one forward.
FLOOR = (
    "import sys, torch\n"
    "from sdcompile.core.npu.device import activate_for_command\n"
    "activate_for_command()\n"
    "import diffusers\n"
    "from sdcompile.core.zoo.models import build_model\n"
    "built = build_model(sys.argv[1], 'bf16')\n"
    "with torch.no_grad():\n"
    "    built.module(**built.inputs)\n"
)


def timed(cmd: list[str]) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds, stdout) of one fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu, proc.stdout


def measure(model: str, runs: int) -> tuple[tuple, tuple]:
    floor, analyze = [], []
    for _ in range(runs):
        floor.append(timed([sys.executable, "-c", FLOOR, model]))
        with tempfile.TemporaryDirectory() as workdir:
            analyze.append(timed([sys.executable, "-m", "sdcompile", "analyze", "--model", model, "--op", "all",
                                  "--json", "--workdir", workdir]))
    return min(floor), min(analyze)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=None, help="zoo names (default: the whole zoo)")
    parser.add_argument("--runs", type=int, default=2, help="interleaved runs per model; the best counts")
    args = parser.parse_args(argv)
    if not args.models:
        from sdcompile.core.zoo.models import zoo_entries

        args.models = list(zoo_entries())

    timed([sys.executable, "-c", FLOOR, args.models[0]])  # warm the bytecode and file caches
    ratios = {}
    for model in args.models:
        (floor, floor_cpu, _), (analyze, analyze_cpu, document) = measure(model, args.runs)
        ratios[model] = analyze / floor
        # torch.compile's share (dynamo, AOT), as analyze times it: where it alone nears the floor (many graph
        # breaks, a large graph) the ratio is torch's, not sdcompile's
        compile_s = json.loads(document)["timings"].get("capture", 0.0)
        print(f"analyze_speed: {model:14s} import+build+forward {floor:5.2f} s | analyze --op all {analyze:5.2f} s "
              f"(torch.compile {compile_s:4.2f} s) | ratio {ratios[model]:.2f} (cpu {analyze_cpu / floor_cpu:.2f})",
              flush=True)
    worst = max(ratios, key=ratios.get)
    ok = ratios[worst] <= TARGET
    print(f"analyze_speed: worst ratio {ratios[worst]:.2f} ({worst}), median "
          f"{sorted(ratios.values())[len(ratios) // 2]:.2f} (target <= {TARGET}) {'OK' if ok else 'OVER'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
