"""Start-up cost of the CLI: `sdcompile --help` against the floor `python -c "import typer, rich"`.

Target: ratio <= 1.2 (the help imports no command module: its list comes from cli.app.COMMANDS).
Both are timed in this one run, interleaved, best of N, so machine noise hits both.
"""

from __future__ import annotations

import subprocess
import sys
import time

RUNS = 15
TARGET = 1.2


def best_of(cmd: list[str]) -> float:
    times = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> int:
    floor_cmd = [sys.executable, "-c", "import typer, rich"]
    help_cmd = [sys.executable, "-m", "sdcompile", "--help"]
    status_cmd = [sys.executable, "-m", "sdcompile", "status", "--json"]
    best_of(help_cmd)  # warm the bytecode cache
    floor, help_, status = best_of(floor_cmd), best_of(help_cmd), best_of(status_cmd)
    ratio = help_ / floor
    print(f"startup: import typer,rich {floor * 1000:.0f} ms | sdcompile --help {help_ * 1000:.0f} ms "
          f"| sdcompile status {status * 1000:.0f} ms")
    print(f"startup: --help / floor = {ratio:.2f} (target <= {TARGET}) {'OK' if ratio <= TARGET else 'OVER'}")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
