"""An independent recomputation of the profile fixtures' numbers with the plain csv module and Decimal, so tests
never compare sdcompile with itself. Fixtures: tests/profiles/data, written by make_fixtures.py."""

from __future__ import annotations

import csv
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
VARIANTS = ("level0_short", "level0_device_blocknum", "level0_shapes", "full_step", "full_old", "op_summary",
            "multi_rank")
# The test's own reading of the spec (DOMAIN.md section 5), written independently of sdcompile.core.profiles.
ALIAS = {"Op Name": "Name", "OP Type": "Type", "Task Type": "Accelerator Core", "Task Duration(us)": "Duration(us)",
         "Task Start Time(us)": "Start Time(us)"}
COPY_TYPES = {"TensorMove", "ViewCopy", "StridedSlice", "AsStrided", "Slice", "Transpose"}
SEED_TERMS = ("InplaceCopy", "ViewCopy", "TensorMove", "StridedSlice")


@dataclass
class Recount:
    rows: int = 0
    total: Decimal = Decimal(0)
    by_name: dict = field(default_factory=lambda: defaultdict(lambda: [0, Decimal(0)]))
    by_type: dict = field(default_factory=lambda: defaultdict(lambda: [0, Decimal(0)]))
    copy: list = field(default_factory=lambda: [0, Decimal(0)])
    cast: list = field(default_factory=lambda: [0, Decimal(0)])
    layout: list = field(default_factory=lambda: [0, Decimal(0)])
    seed: list = field(default_factory=lambda: [0, Decimal(0)])
    copy_per_step: dict = field(default_factory=lambda: defaultdict(lambda: [0, Decimal(0)]))
    copy_per_file: dict = field(default_factory=lambda: defaultdict(lambda: [0, Decimal(0)]))
    starts: list = field(default_factory=list)
    steps: Counter = field(default_factory=Counter)


def csv_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.csv"))


def op_type(name: str, type_cell: str) -> str:
    t = type_cell.strip()
    if t and t != "N/A":
        return t
    if name.startswith("aclnn"):
        return name.split("_")[-1]
    stripped = name.rstrip("0123456789")
    return stripped if stripped in {"LayerNorm"} else name


def recount(root: Path, step: int | None = None) -> Recount:
    out = Recount()
    for path in csv_files(root):
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.reader(fh)
            header = [ALIAS.get(h.strip(), h.strip()) for h in next(reader)]
            for cells in reader:
                row = dict(zip(header, cells, strict=True))
                if step is not None and int(row["Step Id"]) != step:
                    continue
                name = row["Name"].strip()
                dur_cell = row["Duration(us)"].strip()
                dur = Decimal(0) if dur_cell == "N/A" else Decimal(dur_cell)
                t = op_type(name, row.get("Type", "N/A"))
                out.rows += 1
                out.total += dur
                for table, key in ((out.by_name, name), (out.by_type, t)):
                    table[key][0] += 1
                    table[key][1] += dur
                if name.startswith("aclnnInplaceCopy_") and t == "Cast":
                    bucket = out.cast
                elif t in COPY_TYPES or name.startswith("aclnnInplaceCopy_"):
                    bucket = out.copy
                    out.copy_per_file[str(path)][0] += 1
                    out.copy_per_file[str(path)][1] += dur
                    if "Step Id" in row:
                        out.copy_per_step[int(row["Step Id"])][0] += 1
                        out.copy_per_step[int(row["Step Id"])][1] += dur
                elif t in {"TransData", "BroadcastTo", "Identity"}:
                    bucket = out.layout
                else:
                    bucket = None
                if bucket is not None:
                    bucket[0] += 1
                    bucket[1] += dur
                if any(term in name or term in t for term in SEED_TERMS):
                    out.seed[0] += 1
                    out.seed[1] += dur
                start = row.get("Start Time(us)")
                if start is not None:
                    out.starts.append(int(Decimal(start.strip().strip('"').strip()) * 1000))
                if "Step Id" in row:
                    out.steps[int(row["Step Id"])] += 1
    return out


def run_sdcompile(*args: str, env: dict[str, str] | None = None):
    """`python -m sdcompile ARGS` in a fresh process, usable from module-scoped fixtures (the shared `cli`
    fixture is function-scoped)."""
    import os
    import subprocess
    import sys
    from types import SimpleNamespace

    full_env = {**os.environ, "COLUMNS": "200", **(env or {})}
    proc = subprocess.run([sys.executable, "-m", "sdcompile", *args], cwd=Path(__file__).resolve().parents[2],
                          env=full_env, capture_output=True, text=True, timeout=600)
    return SimpleNamespace(exit_code=proc.returncode, stdout=proc.stdout, stderr=proc.stderr)
