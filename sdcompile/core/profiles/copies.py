"""Copy kernels of a profile: count, time, share of non-communication kernel time, per rank, per step and per
attention segment, each number tagged with the catalog rule that produced it; and the eager -> compile inflation.

The share leaves communication (HCCL) time out of its denominator: on a multi-rank run half the kernel time can be
all-reduces, which would hide any copy problem in the compute."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import partial

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sdcompile.core.profiles import headers as H
from sdcompile.core.profiles.catalog import KernelCatalog
from sdcompile.core.profiles.profile import Profile
from sdcompile.core.profiles.read import ABSENT, EXACT, per_row


@dataclass(frozen=True)
class Tally:
    count: int = 0
    us: float = 0.0

    def add(self, count: int, us: float) -> Tally:
        return Tally(self.count + count, self.us + us)


@dataclass(frozen=True)
class RuleTally:
    family: str
    role: str  # copy, cast or layout
    rule: str
    count: int
    us: float


@dataclass(frozen=True)
class CopyKernel:
    name: str
    op_type: str
    family: str
    rule: str
    count: int
    us: float


@dataclass(frozen=True)
class RankCopies:
    rank: str
    copy_count: int
    copy_us: float
    kernel_us: float
    communication_us: float = 0.0

    @property
    def share(self) -> float:
        compute = self.kernel_us - self.communication_us
        return self.copy_us / compute if compute > 0 else 0.0


@dataclass(frozen=True)
class StepCopies:
    step: int
    copy_count: int
    copy_us: float
    kernel_us: float


@dataclass(frozen=True)
class SegmentCopies:
    segment: int  # 0: before the first attention kernel of a step; k: after the k-th one
    copy_count: int
    copy_us: float


@dataclass(frozen=True)
class CopyBreakdown:
    kernel_count: int
    kernel_us: float
    copy: Tally  # every family with role "copy"
    cast: Tally  # dtype casts launched through InplaceCopy (reported beside, not in `copy`)
    layout: Tally  # other layout work (TransData, BroadcastTo, Identity), reported beside
    recipe_search: Tally  # the recipe's literal search list, Name or Type containing one of its terms
    by_rule: tuple[RuleTally, ...]
    kernels: tuple[CopyKernel, ...]  # copy, cast and layout kernels by name, most time first
    per_rank: tuple[RankCopies, ...]
    per_step: tuple[StepCopies, ...]
    per_segment: tuple[SegmentCopies, ...]  # empty unless segment_status is SEGMENTS
    segment_status: str  # SEGMENTS, NO_ATTENTION or NOT_READ
    ordering: str  # how rows were ordered for the segments: read.EXACT, or why file order was kept
    communication_us: float = 0.0  # kernel time of the families with role communication (HCCL)
    communication_count: int = 0

    @property
    def count_share(self) -> float:
        """Copy launches / non-communication kernel launches: the share by count, fixed by what the compile produced
        (a CPU capture's time share swings with the machine's load)."""
        compute = self.kernel_count - self.communication_count
        return self.copy.count / compute if compute > 0 else 0.0

    @property
    def compute_us(self) -> float:
        """Kernel time without communication: the share's denominator."""
        return self.kernel_us - self.communication_us

    @property
    def share(self) -> float:
        return self.copy.us / self.compute_us if self.compute_us > 0 else 0.0


SEGMENTS, NO_ATTENTION, NOT_READ = "segments", "no attention kernels", "row order not read"


@dataclass(frozen=True)
class CopyGrowth:
    name: str
    op_type: str
    rule: str
    eager_count: int
    eager_us: float
    compile_count: int
    compile_us: float

    @property
    def delta_us(self) -> float:
        return self.compile_us - self.eager_us


@dataclass(frozen=True)
class Inflation:
    count_ratio: float  # compile copy count / eager copy count (inf when eager has none)
    time_ratio: float  # compile copy time / eager copy time
    grew_most: tuple[CopyGrowth, ...]  # copy kernels by time growth, largest first
    # 0 -> 0 (no copy kernel on either side): there is no ratio; the value stays 0 and is shown as n/a
    count_undefined: bool = False
    time_undefined: bool = False


def shown_ratio(value: float, undefined: bool = False) -> str:
    """A compile/eager ratio as printed: n/a for 0 -> 0 (nothing to compare), inf when only eager has none."""
    if undefined:
        return "n/a"
    return "inf" if value == float("inf") else f"{value:.2f}x"


def _ratio(a: float, b: float) -> float:
    if b == 0:
        return 0.0 if a == 0 else float("inf")
    return a / b


def copy_breakdown(profile: Profile, catalog: KernelCatalog) -> CopyBreakdown:
    roles = {f.name: f.role for f in catalog.families}
    totals = {"copy": Tally(), "cast": Tally(), "layout": Tally()}
    seed = Tally()
    by_rule: dict[tuple[str, str, str], list] = defaultdict(lambda: [0, 0.0])
    kernels: dict[tuple[str, str, str, str], list] = defaultdict(lambda: [0, 0.0])
    ranks: dict[str, list] = {r.label: [0, 0.0, 0.0] for r in profile.ranks}
    steps: dict[int, list] = defaultdict(lambda: [0, 0.0, 0.0])
    communication = set(catalog.roles("communication"))
    count, comm_us, comm_count = 0, 0.0, 0
    for g in profile.groups:
        count += g.count
        if g.family in communication:
            comm_us += g.total_us
            comm_count += g.count
            ranks[g.rank][2] += g.total_us
        if g.step is not None:
            steps[g.step][2] += g.total_us
        if catalog.recipe_search_hit(g.name, g.op_type):
            seed = seed.add(g.count, g.total_us)
        role = roles.get(g.family)
        if role not in totals:
            continue
        totals[role] = totals[role].add(g.count, g.total_us)
        slot = by_rule[(g.family, role, g.rule)]
        slot[0] += g.count
        slot[1] += g.total_us
        k = kernels[(g.name, g.op_type, g.family, g.rule)]
        k[0] += g.count
        k[1] += g.total_us
        if role == "copy":
            ranks[g.rank][0] += g.count
            ranks[g.rank][1] += g.total_us
            if g.step is not None:
                steps[g.step][0] += g.count
                steps[g.step][1] += g.total_us
    segments, status, ordering = _segments(profile, catalog)
    return CopyBreakdown(
        kernel_count=count,
        kernel_us=profile.kernel_us,
        copy=totals["copy"],
        cast=totals["cast"],
        layout=totals["layout"],
        recipe_search=seed,
        by_rule=tuple(RuleTally(f, role, rule, c, u) for (f, role, rule), (c, u) in sorted(by_rule.items())),
        kernels=tuple(sorted((CopyKernel(n, t, f, r, c, u) for (n, t, f, r), (c, u) in kernels.items()),
                             key=lambda k: (-k.us, k.name))),
        per_rank=tuple(RankCopies(r.label, ranks[r.label][0], ranks[r.label][1], r.kernel_us, ranks[r.label][2])
                       for r in profile.ranks),
        per_step=tuple(StepCopies(s, c, u, k) for s, (c, u, k) in sorted(steps.items())),
        per_segment=segments,
        segment_status=status,
        ordering=ordering,
        communication_us=comm_us,
        communication_count=comm_count,
    )


def inflation(eager: Profile, compiled: Profile, eager_b: CopyBreakdown, compile_b: CopyBreakdown,
              catalog: KernelCatalog) -> Inflation:
    copy_families = set(catalog.roles("copy"))
    e: dict[str, list] = defaultdict(lambda: [0, 0.0, "", ""])
    c: dict[str, list] = defaultdict(lambda: [0, 0.0, "", ""])
    for side, profile in ((e, eager), (c, compiled)):
        for g in profile.groups:
            if g.family in copy_families:
                slot = side[g.name]
                slot[0] += g.count
                slot[1] += g.total_us
                slot[2], slot[3] = g.op_type, g.rule
    rows = []
    for name in set(e) | set(c):
        ec, eu, et, er = e.get(name, [0, 0.0, "", ""])
        cc, cu, ct, cr = c.get(name, [0, 0.0, "", ""])
        rows.append(CopyGrowth(name, et or ct, er or cr, ec, eu, cc, cu))
    rows.sort(key=lambda r: (-r.delta_us, r.name))
    return Inflation(
        count_ratio=_ratio(compile_b.copy.count, eager_b.copy.count),
        time_ratio=_ratio(compile_b.copy.us, eager_b.copy.us),
        grew_most=tuple(rows),
        count_undefined=compile_b.copy.count == 0 and eager_b.copy.count == 0,
        time_undefined=compile_b.copy.us == 0 and eager_b.copy.us == 0,
    )


def _segments(profile: Profile, catalog: KernelCatalog) -> tuple[tuple[SegmentCopies, ...], str, str]:
    """Copies per attention segment: within each step, kernels are ordered by exact start time (file order when a
    rank has none usable) and segment k holds the kernels after the k-th attention kernel — a layer index when
    every layer runs one attention."""
    if not profile.tables:
        return (), NOT_READ, ABSENT
    unordered = sorted({t.ordering for t in profile.tables if t.ordering != EXACT})
    ordering = unordered[0] if unordered else EXACT
    attention = set(catalog.roles("attention"))
    copy = set(catalog.roles("copy"))
    seg_count, seg_us = np.zeros(0, dtype=np.int64), np.zeros(0)  # indexed by segment, summed over ranks
    found_attention = False
    for t in profile.tables:
        table = t.table
        if table.num_rows == 0:
            continue
        is_attn, is_copy = _row_flags(table, t.rank.label, profile, catalog, attention, copy)
        found_attention |= bool(is_attn.any())
        step = (pc.fill_null(table[H.STEP], -1).to_numpy() if H.STEP in table.column_names
                else np.zeros(table.num_rows, dtype=np.int64))
        order = _order(table, step)
        step_o, attn_o = step[order], is_attn[order]
        copies = np.flatnonzero(is_copy[order])  # positions in that order; only these rows are counted
        attn_seen = np.cumsum(attn_o)  # attention kernels up to and including each row
        starts = np.r_[0, np.flatnonzero(step_o[1:] != step_o[:-1]) + 1]  # where each step's rows begin
        before_step = attn_seen[starts] - attn_o[starts]  # attention kernels before each step
        seg_c = attn_seen[copies] - before_step[np.searchsorted(starts, copies, side="right") - 1]
        counts = np.bincount(seg_c)
        sums = np.bincount(seg_c, weights=table[H.DURATION].to_numpy()[order][copies])
        size = max(len(seg_count), len(counts))
        seg_count = np.pad(seg_count, (0, size - len(seg_count))) + np.pad(counts, (0, size - len(counts)))
        seg_us = np.pad(seg_us, (0, size - len(seg_us))) + np.pad(sums, (0, size - len(sums)))
    if not found_attention:
        return (), NO_ATTENTION, ordering
    present = np.flatnonzero(seg_count)  # a run of thousands of layers: one pass, not a Python sum per segment
    return (tuple(map(SegmentCopies, present.tolist(), seg_count[present].tolist(), seg_us[present].tolist())),
            SEGMENTS, ordering)


def _row_flags(table: pa.Table, rank: str, profile: Profile, catalog: KernelCatalog, attention: set[str],
               copy: set[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per-row booleans (attention kernel, copy kernel), from the families already given to the rank's groups."""
    families: dict[str, set[str]] = defaultdict(set)
    for g in profile.groups:
        if g.rank == rank:
            families[g.name].add(g.family)
    if all(len(f) == 1 for f in families.values()):  # each name has one family: match on the name column alone
        names = table[H.NAME]
        flags = []
        for wanted in (attention, copy):
            value_set = pa.array([n for n, f in families.items() if f & wanted], pa.string())
            flags.append(per_row(names, partial(pc.is_in, value_set=value_set)).to_numpy())
        return flags[0], flags[1]
    # a name whose rows fall in several families (e.g. Type N/A on some rows): classify every (name, type, core)
    n = table.num_rows
    types = table[H.TYPE] if H.TYPE in table.column_names else pa.nulls(n, pa.string())
    cores = table[H.CORE] if H.CORE in table.column_names else pa.nulls(n, pa.string())
    text = [column.cast(pa.string()) for column in (table[H.NAME], types, cores)]
    key = pc.binary_join_element_wise(text[0], pc.fill_null(text[1], ""), pc.fill_null(text[2], ""), "\x1f")
    encoded = pc.dictionary_encode(key).combine_chunks()
    fams = [catalog.classify(*_split(k)).family for k in encoded.dictionary.to_pylist()]
    indices = encoded.indices.to_numpy()
    return (np.array([f in attention for f in fams], dtype=bool)[indices],
            np.array([f in copy for f in fams], dtype=bool)[indices])


def _order(table: pa.Table, step: np.ndarray) -> np.ndarray | slice:
    """Row order by (step, exact start time); file order when start times are absent. Skips the sort when the file
    is already in that order, as the profiler usually writes it."""
    if "start_ns" in table.column_names and table["start_ns"].null_count == 0:
        start = table["start_ns"].to_numpy(zero_copy_only=False)
        if (np.all(step[1:] >= step[:-1]) and np.all((start[1:] >= start[:-1]) | (step[1:] != step[:-1]))):
            return slice(None)
        return np.lexsort((start, step))
    if np.all(step[1:] >= step[:-1]):
        return slice(None)
    return np.argsort(step, kind="stable")


def _split(key: str) -> tuple[str, str | None, str | None]:
    name, op_type, core = key.split("\x1f")
    return name, op_type or None, core or None
