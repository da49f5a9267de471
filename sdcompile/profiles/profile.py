"""A profile = every rank of one run, read columnar and aggregated per (rank, step, kernel name, op type).

Aggregation happens in pyarrow (millions of rows -> a few thousand groups); everything after it is plain Python
over the groups, so every number downstream is a sum over these groups.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from sdcompile.errors import BadInput
from sdcompile.profiles import headers as H
from sdcompile.profiles.catalog import KernelCatalog
from sdcompile.profiles.locate import locate
from sdcompile.profiles.read import RankTable, read_rank

NPU_PROFILE = "npu profile (torch_npu profiler)"


@dataclass(frozen=True)
class KernelGroup:
    rank: str
    step: int | None
    name: str
    op_type: str  # from Type, or derived from Name when Type is N/A or missing
    family: str
    rule: str  # the catalog rule that placed it in its family
    count: int
    total_us: float


@dataclass(frozen=True)
class RankInfo:
    label: str
    path: str
    variant: str  # header variant, e.g. "full +Step Id"
    rows: int
    kernel_us: float  # sum of Duration(us) over the rank's (selected) rows
    steps: tuple[int, ...]
    missing_durations: int
    missing_types: int  # rows whose Type was N/A or absent (op type taken from Name)


@dataclass(frozen=True)
class Profile:
    path: str
    source: str  # NPU_PROFILE, or the label of a CPU capture
    device: str  # "npu", or the capture's device ("cpu (emulated npu)", "cpu")
    step: int | None  # the step selected with --step, else None (all steps)
    ranks: tuple[RankInfo, ...]
    groups: tuple[KernelGroup, ...]
    tables: tuple[RankTable, ...] = field(default=(), repr=False, compare=False)  # kept only when asked for

    @property
    def kernel_us(self) -> float:
        return sum(r.kernel_us for r in self.ranks)

    @property
    def rows(self) -> int:
        return sum(r.rows for r in self.ranks)

    @property
    def steps(self) -> tuple[int, ...]:
        return tuple(sorted({s for r in self.ranks for s in r.steps}))


def load_profile(path: Path | str, catalog: KernelCatalog, step: int | None = None, *, rows: bool = False,
                 extra_columns: frozenset[str] = frozenset()) -> Profile:
    """Read every rank under `path`. `rows=True` keeps the row tables (with exact start times) for ordering."""
    ranks = locate(path)
    columns = {H.NAME, H.TYPE, H.CORE, H.DURATION, H.STEP} | set(extra_columns)
    if rows:
        columns |= {H.START}
    tables = [read_rank(r, columns) for r in ranks]
    _check_same_header(tables)
    if len({t.rank.capture is None for t in tables}) > 1:
        raise BadInput(f"{path} mixes CPU-captured and NPU profiler folders",
                       "compare profiles of one kind: pass the CPU captures and the NPU runs separately")
    capture = tables[0].rank.capture
    if step is not None:
        available = sorted({s for t in tables for s in (_steps(t) if H.STEP in t.table.column_names else ())})
        tables = [_select_step(t, step) for t in tables]
        if not any(t.table.num_rows for t in tables):
            raise BadInput(f"{path}: no kernels in step {step}; steps present: {available or 'none'}",
                           "pick one of the steps present")
    groups: list[KernelGroup] = []
    infos: list[RankInfo] = []
    for t in tables:
        rank_groups = _aggregate(t, catalog)
        groups.extend(rank_groups)
        missing_types = t.table[H.TYPE].null_count if H.TYPE in t.table.column_names else t.rows
        infos.append(RankInfo(
            label=t.rank.label, path=str(t.rank.path), variant=t.header.variant, rows=t.rows,
            kernel_us=sum(g.total_us for g in rank_groups), steps=tuple(_steps(t)),
            missing_durations=t.missing_durations, missing_types=missing_types,
        ))
    source = capture.get("source", "cpu capture") if capture else NPU_PROFILE
    device = capture.get("device", "cpu") if capture else "npu"
    return Profile(str(path), source, device, step, tuple(infos), tuple(groups), tuple(tables) if rows else ())


def _check_same_header(tables: list[RankTable]) -> None:
    first = tables[0]
    for t in tables[1:]:
        if t.header.signature != first.header.signature:
            only_a = _few([c for c in first.header.original if c not in t.header.original])
            only_b = _few([c for c in t.header.original if c not in first.header.original])
            raise BadInput(
                f"ranks have different headers: {first.rank.label} ({first.header.variant}) vs {t.rank.label} "
                f"({t.header.variant}); only in the first: {only_a or 'none'}, only in the second: "
                f"{only_b or 'none (same columns, other order)'}",
                "profile every rank in one run with one torch_npu version, or pass the ranks separately",
            )


def _few(columns: list[str], limit: int = 6) -> str:
    if not columns:
        return ""
    more = f" and {len(columns) - limit} more" if len(columns) > limit else ""
    return ", ".join(columns[:limit]) + more


def _steps(t: RankTable) -> list[int]:
    if H.STEP not in t.table.column_names:
        return []
    return sorted(s for s in t.table[H.STEP].unique().to_pylist() if s is not None)


def _select_step(t: RankTable, step: int) -> RankTable:
    if H.STEP not in t.table.column_names:
        raise BadInput(f"{t.rank.path} has no Step Id column ({t.header.variant}), so --step cannot select a step",
                       "drop --step, or profile with a schedule (torch_npu.profiler.schedule) so steps are recorded")
    import pyarrow.compute as pc

    mask = pc.fill_null(pc.equal(t.table[H.STEP], step), False)
    return RankTable(t.rank, t.header, t.table.filter(mask), t.missing_durations)


def _aggregate(t: RankTable, catalog: KernelCatalog) -> list[KernelGroup]:
    table = t.table
    keys = [c for c in (H.STEP, H.NAME, H.TYPE, H.CORE) if c in table.column_names]
    if table.num_rows == 0:
        return []
    grouped = pa.TableGroupBy(table.select([*keys, H.DURATION]), keys, use_threads=True).aggregate(
        [(H.DURATION, "sum"), (H.DURATION, "count")]
    )
    out = []
    cols = {k: grouped[k].to_pylist() for k in keys}
    sums = grouped[f"{H.DURATION}_sum"].to_pylist()
    counts = grouped[f"{H.DURATION}_count"].to_pylist()
    n = grouped.num_rows
    steps = cols.get(H.STEP, [None] * n)
    types = cols.get(H.TYPE, [None] * n)
    cores = cols.get(H.CORE, [None] * n)
    for i, name in enumerate(cols[H.NAME]):
        c = catalog.classify(name, types[i], cores[i])
        out.append(KernelGroup(t.rank.label, steps[i], name, c.op_type, c.family, c.rule, counts[i], sums[i]))
    return out


@dataclass(frozen=True)
class ProfileSummary:
    """What a report says about one side (eager or compile) without its kernel groups."""

    path: str
    source: str
    device: str
    step: int | None
    steps: tuple[int, ...]
    rows: int
    kernel_us: float
    ranks: tuple[RankInfo, ...]


def summarize(profile: Profile) -> ProfileSummary:
    return ProfileSummary(profile.path, profile.source, profile.device, profile.step, profile.steps, profile.rows,
                          profile.kernel_us, profile.ranks)


def comparability_notes(eager: Profile, compiled: Profile) -> tuple[str, ...]:
    """Why totals of the two sides may not compare one to one."""
    notes = []
    if len(eager.ranks) != len(compiled.ranks):
        notes.append(f"rank counts differ: eager {len(eager.ranks)}, compile {len(compiled.ranks)} — totals are sums "
                     "over ranks")
    if eager.step is None and len(eager.steps) != len(compiled.steps):
        notes.append(f"step counts differ: eager {len(eager.steps)}, compile {len(compiled.steps)} — pick one with "
                     "--step N")
    if eager.source != compiled.source:
        notes.append(f"the sides come from different sources: eager {eager.source}, compile {compiled.source}")
    for side, p in (("eager", eager), ("compile", compiled)):
        if p.source != NPU_PROFILE:
            notes.append(f"{side} is a {p.source}: durations are CPU times and Type is the op type an NPU launch of "
                         "each ATen op would report (catalog mapping), not NPU measurements")
        missing = sum(r.missing_durations for r in p.ranks)
        if missing:
            notes.append(f"{side}: {missing} row(s) with Duration(us) N/A counted as 0 us")
        untyped = sum(r.missing_types for r in p.ranks)
        if untyped:
            notes.append(f"{side}: {untyped} row(s) with Type N/A or absent: op type taken from the kernel Name")
    return tuple(notes)
