"""The header variants of kernel_details.csv (and op_summary spellings), mapped onto canonical column names.

Variants seen in torch_npu / msprof output (all parse):
  Level0 short      Name,Type,Accelerator Core,Start Time(us),Duration(us),Wait Time(us),Block Dim
                    (`Device_id,` in front from torch_npu 7.1; `Block Num` instead of `Block Dim` later;
                    optionally followed by the six Input/Output Shapes/Data Types/Formats columns)
  full              Step Id,Device_id,Model ID,Task ID,Stream ID,Name,Type,OP State,Accelerator Core,...,
                    Context ID,<aic_*/aiv_* metrics>  (older files lack Device_id, OP State, HF32 Eligible)
  op_summary        Op Name, OP Type, Task Type, Task Start Time(us) (older: Task Start Time), Task Duration(us), ...
`Step Id,` is prepended to any of them when the profiler ran with a schedule.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass

from sdcompile.catalogs import load
from sdcompile.util.errors import BadInput

# Canonical names used inside sdcompile. Only these are ever read from a file; every other column is skipped.
NAME = "Name"
TYPE = "Type"
CORE = "Accelerator Core"
START = "Start Time(us)"
DURATION = "Duration(us)"
STEP = "Step Id"
DEVICE = "Device_id"
INPUT_DTYPES = "Input Data Types"
INPUT_SHAPES = "Input Shapes"


def _aliases() -> dict[str, str]:
    """Spelling -> canonical name, from catalogs/kernel_headers.toml (every start-time spelling included)."""
    data = load("kernel_headers")
    start = data["start_time"]
    return {**data["aliases"], **{s: start["canonical"] for s in start["spellings"]}}


ALIASES = _aliases()

REQUIRED = (NAME, DURATION)
SHAPE_COLUMNS = ("Input Shapes", "Input Data Types", "Input Formats", "Output Shapes", "Output Data Types",
                 "Output Formats")
_FULL_MARKERS = ("Task ID", "Stream ID", "Model ID")


@dataclass(frozen=True)
class Header:
    """One file's header: its original spelling, the canonical name of each column, and what variant it is."""

    original: tuple[str, ...]
    canonical: tuple[str, ...]
    variant: str  # e.g. "level0 short +Device_id +Block Num +shapes", "full +Step Id", "op_summary"

    def has(self, column: str) -> bool:
        return column in self.canonical

    @property
    def signature(self) -> tuple[str, ...]:
        """What must agree between ranks of one run: the canonical columns, in order."""
        return self.canonical


def canonical_name(raw: str) -> str:
    name = raw.strip().strip("\ufeff").strip()
    return ALIASES.get(name, name)


def parse_header(line: str, source: str) -> Header:
    """Parse the first line of a kernel CSV (already decoded, BOM and line ending removed)."""
    try:
        original = tuple(next(csv.reader([line])))
    except (csv.Error, StopIteration) as exc:
        raise BadInput(f"{source}: cannot parse the header line ({exc})", "pass a kernel_details.csv") from exc
    canonical = tuple(canonical_name(c) for c in original)
    missing = [c for c in REQUIRED if c not in canonical]
    if missing:
        found = ", ".join(repr(c) for c in original) or "none"
        raise BadInput(
            f"{source}: no {' or '.join(repr(m) for m in missing)} column; columns found: {found}",
            "pass an Ascend profiler kernel_details.csv (or op_summary CSV) with Name and Duration(us) columns",
        )
    dupes = sorted({c for c in canonical if canonical.count(c) > 1})
    if dupes:
        raise BadInput(f"{source}: column(s) {', '.join(dupes)} appear twice in the header",
                       "pass the file as the profiler wrote it")
    return Header(original, canonical, _variant(original, canonical))


def _variant(original: tuple[str, ...], canonical: tuple[str, ...]) -> str:
    if "Op Name" in original or "Task Duration(us)" in original:
        base = "op_summary"
    elif any(m in canonical for m in _FULL_MARKERS):
        base = "full"
    else:
        base = "level0 short"
    extras = []
    if STEP in canonical:
        extras.append("+Step Id")
    if base != "full" and DEVICE in canonical:
        extras.append("+Device_id")
    if "Block Num" in original:
        extras.append("+Block Num")
    if base != "full" and any(c in canonical for c in SHAPE_COLUMNS):
        extras.append("+shapes")
    return " ".join([base, *extras])
