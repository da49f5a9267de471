"""Run every benchmark in this folder (what `make bench` does) and print their ratios.

Each benchmark is a script whose main() prints `name: ... = ratio (target ...)` lines and returns 0 when
its targets hold. This runner reports every one and exits non-zero if any missed its target.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    failed = []
    for script in sorted(HERE.glob("*.py")):
        if script.name in {"run_all.py"} or script.name.startswith("_"):
            continue
        print(f"== {script.stem}", flush=True)
        proc = subprocess.run([sys.executable, str(script)], cwd=HERE.parent)
        if proc.returncode != 0:
            failed.append(script.stem)
    print("all benchmark targets met" if not failed else f"targets missed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
