"""Real-size analysis on CPU: `sdcompile analyze --model M --size real --num-layers 1 --op all` for Flux and Wan, its
wall time and peak memory, against the same command at tiny size and against the model's float32 size; and the
heaviest phase, `scaffold --dry-run` (which compiles through the target's backend, freeze() folding weights), on
Flux's RMSNorm.

Targets, measured in this one run (each command in its own process, peak memory from the kernel's rusage):
- peak memory / the model's float32 size <= NEED_FACTOR of sdcompile.core.zoo.memory, for analyze and scaffold: the
  memory check refuses a config by that factor, so it must cover what a phase takes (else the check lets an OOM
  through);
- real-size wall time / tiny-size wall time is printed for reading (compiling a larger graph of the same nodes costs
  little more; the build of half a billion random weights is the difference), not gated: both swing with the load.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

MODELS = ("flux", "wan")


def run(model: str, *size: str, command: tuple[str, ...] = ("analyze", "--op", "all")) -> tuple[float, int]:
    """(seconds, peak resident bytes) of one command in a fresh process (its own rusage, from wait4)."""
    with tempfile.TemporaryDirectory(prefix="sdcompile-bench-") as folder, \
            tempfile.TemporaryFile() as err:
        if command[0] == "scaffold":
            subprocess.run([sys.executable, "-m", "sdcompile", "-q", "fetch-target", "MindIE-SD"], cwd=folder,
                           check=True, capture_output=True)
        started = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "sdcompile", "-q", command[0], "--model", model, *size,
                                 *command[1:], "--json"], cwd=folder, stdout=subprocess.DEVNULL, stderr=err)
        _pid, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - started
        if os.waitstatus_to_exitcode(status) not in (0, 1):  # 1: a gate, still a measured run
            err.seek(0)
            raise SystemExit(f"real_size: {command[0]} --model {model} {' '.join(size)} failed: "
                             f"{err.read().decode(errors='replace')[-2000:]}")
    return seconds, usage.ru_maxrss * 1024  # kilobytes on Linux


def main() -> int:
    from sdcompile.core.zoo.any_class import constructor_defaults, layer_rules, model_class, shrink
    from sdcompile.core.zoo.memory import NEED_FACTOR, estimate
    from sdcompile.core.zoo.models import resolve_model

    ok = True
    tiny = {model: run(model) for model in MODELS}
    for model in MODELS:
        cls = model_class(resolve_model(model).model_class_name)
        config, _changed = shrink(constructor_defaults(cls), layer_rules(), 1)
        need = estimate(cls, config)
        seconds, peak = run(model, "--size", "real", "--num-layers", "1")
        factor = peak / need.bytes_fp32
        ok &= factor <= NEED_FACTOR
        print(f"real_size: {model} real, 1 layer: {need.parameters / 1e6:.0f} M parameters "
              f"({need.bytes_fp32 / 2**30:.2f} GB fp32), analyze {seconds:.1f} s, peak {peak / 2**30:.2f} GB")
        print(f"real_size: {model} peak / fp32 size = {factor:.2f} (target <= {NEED_FACTOR}) "
              f"{'OK' if factor <= NEED_FACTOR else 'OVER'}")
        print(f"real_size: {model} real / tiny wall time = {seconds / tiny[model][0]:.2f} "
              f"({seconds:.1f} s / {tiny[model][0]:.1f} s; read, not gated)")
        if model == "flux":
            seconds, peak = run(model, "--size", "real", "--num-layers", "1",
                                command=("scaffold", "--op", "rmsnorm", "--repo", "MindIE-SD", "--dry-run"))
            factor = peak / need.bytes_fp32
            ok &= factor <= NEED_FACTOR
            print(f"real_size: {model} scaffold --dry-run {seconds:.1f} s, peak {peak / 2**30:.2f} GB: peak / fp32 "
                  f"size = {factor:.2f} (target <= {NEED_FACTOR}) {'OK' if factor <= NEED_FACTOR else 'OVER'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
