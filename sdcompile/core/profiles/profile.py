"""A profile = every rank of one run, read columnar and aggregated per (rank, step, kernel name, op type).

Aggregation happens in pyarrow (millions of rows -> a few thousand groups); everything after it is plain Python
over the groups, so every number downstream is a sum over these groups.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from sdcompile.core.profiles import headers as H
from sdcompile.core.profiles.catalog import KernelCatalog
from sdcompile.core.profiles.locate import LeftOut, MissingRank, compact_ranges, locate
from sdcompile.core.profiles.read import EXACT, RankTable, per_row, read_rank
from sdcompile.util.errors import BadInput
from sdcompile.util.input_checks import reading

NPU_PROFILE = "npu profile (torch_npu profiler)"
UNKNOWN_SOURCE = "unknown"  # a bare CSV whose data does not show what wrote it
DATA_CPU_SOURCE = "cpu capture"  # a bare CSV whose Accelerator Core cells say CPU


@dataclass(frozen=True)
class KernelGroup:
    rank: str
    step: int | None
    name: str
    op_type: str  # from Type, or derived from Name when Type is N/A or missing
    key: str  # what the kernel diff compares by name: the Name, or its run-independent key (HCCL suffix dropped)
    family: str
    rule: str  # the catalog rule that placed it in its family
    count: int
    total_us: float
    complex_count: int = 0  # launches with a complex input (Input Data Types), when the profile records them
    high_rank_count: int = 0  # launches with an input of rank 5 or more (Input Shapes), when the profile records them


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
    rank_id: int | None = None  # from profiler_info_<rank>.json
    session: str | None = None  # the session folder's timestamp
    level: str | None = None  # the profiler level profiler_info records (Level0, Level1, Level2)
    files: int = 1  # msprof slices read as this one rank
    ordering: str = EXACT  # read.EXACT, or why the rows keep file order (only meaningful when rows were read)
    na_step_rows: int = 0  # rows whose Step Id is N/A in a file that has the column (in totals, in no step)


@dataclass(frozen=True)
class Profile:
    path: str
    source: str  # NPU_PROFILE, a CPU capture's label, DATA_CPU_SOURCE or UNKNOWN_SOURCE
    device: str  # "npu", the capture's device ("cpu (emulated npu)", "cpu"), or "unknown"
    step: int | None  # the step selected with --step, else None (all steps)
    ranks: tuple[RankInfo, ...]
    groups: tuple[KernelGroup, ...]
    source_from: str = ""  # where the source was read: "sdcompile_capture.json", "profiler_info", "Accelerator Core"
    missing: tuple[MissingRank, ...] = ()  # run folders without kernel data
    left_out: tuple[LeftOut, ...] = ()  # sessions --session / --rank did not pick
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
                 extra_columns: frozenset[str] = frozenset(), session: tuple[str, ...] = (),
                 rank: int | None = None, what: str = "the profile", qualifiers: bool = True) -> Profile:
    """Read every rank under `path`. `rows=True` keeps the row tables (with exact start times) for ordering;
    `qualifiers=False` skips the input shape and dtype columns, read only to count launches on complex or rank-5+
    inputs (integrate's op check weighs them; on a 1M-row file they are a tenth of the read). An OSError reading it
    is BadInput naming `what` (the argument the user passed) and the path."""
    columns = {H.INPUT_DTYPES, H.INPUT_SHAPES} if qualifiers else set()
    with reading(path, what):
        return _load_profile(path, catalog, step, rows, extra_columns | columns, session, rank)


def _load_profile(path: Path | str, catalog: KernelCatalog, step: int | None, rows: bool, extra_columns: frozenset[str],
                  session: tuple[str, ...], rank: int | None) -> Profile:
    located = locate(path, session, rank)
    columns = {H.NAME, H.TYPE, H.CORE, H.DURATION, H.STEP} | set(extra_columns)
    if rows:
        columns |= {H.START}
    tables = [read_rank(r, columns) for r in located.ranks]
    _check_same_header(tables)
    if len({t.rank.capture is None for t in tables}) > 1:
        raise BadInput(f"{path} mixes CPU-captured and NPU profiler folders",
                       "compare profiles of one kind: pass the CPU captures and the NPU runs separately")
    na_steps = {t.rank.label: _na_steps(t) for t in tables}
    if step is not None:
        available = sorted({s for t in tables for s in (_steps(t) if H.STEP in t.table.column_names else ())})
        tables = [_select_step(t, step) for t in tables]
        if not any(t.table.num_rows for t in tables):
            shown = f"{compact_ranges(available)} ({len(available)} steps)" if available else "none"
            raise BadInput(f"{path}: no kernels in step {step}; steps present: {shown}",
                           "pick one of the steps present")
    groups: list[KernelGroup] = []
    infos: list[RankInfo] = []
    for t in tables:
        rank_groups = _aggregate(t, catalog)
        groups.extend(rank_groups)
        missing_types = t.table[H.TYPE].null_count if H.TYPE in t.table.column_names else t.rows
        run = t.rank.run
        infos.append(RankInfo(
            label=t.rank.label, path=str(t.rank.path), variant=t.header.variant, rows=t.rows,
            kernel_us=sum(g.total_us for g in rank_groups), steps=tuple(_steps(t)),
            missing_durations=t.missing_durations, missing_types=missing_types, rank_id=run.rank_id,
            session=run.session, level=run.level, files=len(t.rank.files), ordering=t.ordering,
            na_step_rows=na_steps[t.rank.label],
        ))
    source, device, source_from = _source(tables, catalog)
    return Profile(str(path), source, device, step, tuple(infos), tuple(groups), source_from, located.missing,
                   located.left_out, tuple(tables) if rows else ())


def _source(tables: list[RankTable], catalog: KernelCatalog) -> tuple[str, str, str]:
    """What made the profile: the capture info sdcompile wrote, the profiler_info torch_npu wrote, or what the
    Accelerator Core cells show; a bare CSV that shows nothing is of unknown source."""
    capture = tables[0].rank.capture  # validated when read (locate.read_capture_note): its fields are typed
    if capture is not None:
        return capture.get("source", "cpu capture"), capture.get("device", "cpu"), "sdcompile_capture.json"
    if any(t.rank.run.info_file for t in tables):
        return NPU_PROFILE, "npu", "profiler_info"
    cores: set[str] = set()
    for t in tables:
        if H.CORE in t.table.column_names:
            cores |= {c for c in t.table[H.CORE].unique().to_pylist() if c}
    if cores & catalog.npu_cores:
        return NPU_PROFILE, "npu", "Accelerator Core"
    if cores and cores <= catalog.cpu_cores:
        return DATA_CPU_SOURCE, "cpu", "Accelerator Core"
    return UNKNOWN_SOURCE, "unknown", ""


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


def _na_steps(t: RankTable) -> int:
    if H.STEP not in t.table.column_names:
        return 0
    nulls = t.table[H.STEP].null_count
    return nulls if nulls < t.rows else 0  # a column of N/A only is a run without a schedule, not dropped rows


def _select_step(t: RankTable, step: int) -> RankTable:
    if H.STEP not in t.table.column_names:
        raise BadInput(f"{t.rank.path} has no Step Id column ({t.header.variant}), so --step cannot select a step",
                       "drop --step, or profile with a schedule (torch_npu.profiler.schedule) so steps are recorded")
    import pyarrow.compute as pc

    mask = pc.fill_null(pc.equal(t.table[H.STEP], step), False)
    return RankTable(t.rank, t.header, t.table.filter(mask), t.missing_durations, t.ordering)


def _aggregate(t: RankTable, catalog: KernelCatalog) -> list[KernelGroup]:
    table = t.table
    keys = [c for c in (H.STEP, H.NAME, H.TYPE, H.CORE) if c in table.column_names]
    if table.num_rows == 0:
        return []
    selected = table.select([*keys, H.DURATION])
    aggregates = [(H.DURATION, "sum"), (H.DURATION, "count")]
    for flag, column, pattern in _QUALIFIERS:
        if column in table.column_names:
            selected = selected.append_column(flag, _matches(table[column], pattern))
            aggregates.append((flag, "sum"))
    grouped = pa.TableGroupBy(selected, keys, use_threads=True).aggregate(aggregates)
    out = []
    cols = {k: grouped[k].to_pylist() for k in keys}
    sums = grouped[f"{H.DURATION}_sum"].to_pylist()
    counts = grouped[f"{H.DURATION}_count"].to_pylist()
    n = grouped.num_rows
    steps = cols.get(H.STEP, [None] * n)
    types = cols.get(H.TYPE, [None] * n)
    cores = cols.get(H.CORE, [None] * n)
    flags = {flag: grouped[f"{flag}_sum"].to_pylist() if f"{flag}_sum" in grouped.column_names else [0] * n
             for flag, _column, _pattern in _QUALIFIERS}
    for i, name in enumerate(cols[H.NAME]):
        c = catalog.classify(name, types[i], cores[i])
        out.append(KernelGroup(t.rank.label, steps[i], name, c.op_type, c.key, c.family, c.rule, counts[i], sums[i],
                               int(flags[_COMPLEX][i] or 0), int(flags[_HIGH_RANK][i] or 0)))
    return out


_COMPLEX, _HIGH_RANK = "complex input", "input of rank 5+"
# (flag, column, regex a row's cell matches): a complex dtype (COMPLEX64, DT_COMPLEX64); a shape of 5 or more dims
# in a `;`-separated list (`"1,88,1,4,2;1,88,4,4,1"`, quotes as torch_npu writes them)
_QUALIFIERS = ((_COMPLEX, H.INPUT_DTYPES, "(?i)COMPLEX"), (_HIGH_RANK, H.INPUT_SHAPES, r'(^|;)"*(\d+,){4,}\d+'))


def _matches(cells, pattern: str) -> pa.ChunkedArray:
    """1 for a row whose cell matches `pattern`, else 0 (also for an empty cell)."""
    import pyarrow.compute as pc

    return pc.fill_null(per_row(cells, lambda values: pc.cast(pc.match_substring_regex(values, pattern), pa.int64())),
                        0)


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
    source_from: str = ""
    missing: tuple[MissingRank, ...] = ()
    left_out: tuple[LeftOut, ...] = ()


def summarize(profile: Profile) -> ProfileSummary:
    return ProfileSummary(profile.path, profile.source, profile.device, profile.step, profile.steps, profile.rows,
                          profile.kernel_us, profile.ranks, profile.source_from, profile.missing, profile.left_out)
