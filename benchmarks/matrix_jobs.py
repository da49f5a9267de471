"""`sdcompile matrix` run with --jobs 1 and --jobs 2 over the same cells, and as two shards joined by `matrix merge`.

Each cell is a whole `sdcompile run` in a process of its own, so two at once use both cores of a two-core machine.
Measured in this one run on tiny Sana's RMSNorm and GELU (two cells), each side in a fresh folder:

    --jobs 2 / --jobs 1          target <= 0.85
    the three tables' cells      identical (outcome, carrier, fused calls and launches per cell)
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from _cli import sdcompile

JOBS_TARGET = 0.85
CELLS = ("--models", "sana", "--ops", "rmsnorm,gelu")
COMPARED = ("model", "op", "torch", "outcome", "carrier", "phase", "fused_nodes", "fused_launches")


def cells(path: Path) -> list[tuple]:
    return [tuple(c[k] for k in COMPARED) for c in json.loads(path.read_text())["cells"]]


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="sdcompile-bench-matrix-") as tmp:
        root = Path(tmp)
        for name in ("jobs1", "jobs2", "shards"):
            (root / name).mkdir()
        one = sdcompile(root / "jobs1", "matrix", *CELLS, "--jobs", "1", "--save", "t.json")
        two = sdcompile(root / "jobs2", "matrix", *CELLS, "--jobs", "2", "--save", "t.json")
        for i in (1, 2):
            sdcompile(root / "shards", "matrix", *CELLS, "--shard", f"{i}/2", "--save", f"s{i}.json")
        sdcompile(root / "shards", "matrix", "merge", "s1.json", "s2.json", "--save", "t.json")
        tables = [cells(root / name / "t.json") for name in ("jobs1", "jobs2", "shards")]
    ratio = two / one
    same = tables[0] == tables[1] == tables[2]
    print(f"matrix_jobs: --jobs 2 {two:.1f} s / --jobs 1 {one:.1f} s = {ratio:.2f} (target <= {JOBS_TARGET})"
          f"{'' if ratio <= JOBS_TARGET else '  MISSED'}")
    print(f"matrix_jobs: jobs 1, jobs 2 and two merged shards give {'identical' if same else 'DIFFERENT'} tables "
          f"({len(tables[0])} cells)")
    if not same:
        for table in tables:
            print("  ", table)
    return 0 if ratio <= JOBS_TARGET and same else 1


if __name__ == "__main__":
    sys.exit(main())
