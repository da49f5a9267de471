"""The kernels a fusion brought besides its fused kernel (copies, casts, moves), each placed by its neighbours and
mapped to a cause of the recipe's catalog (`Ascend/MindIE-SD` pattern-dev, benefit-rootcause-guide):

  R1 dtype promotion      a cast next to the fused kernel: the replacement got the pre-cast value and the fused
                          API casts x up and back (about two x-sized casts per site)
  R2 input materialisation a copy right before the fused kernel: it needs a contiguous input the chain only sliced
  R3 layout boundary      a copy or move between two fused kernels
  R4 generic mis-match    fewer fused launches than pattern hits, or the kernel's own `fallback` print
  R5 slower kernel        no side effect, yet the fused kernels outweigh what they replaced

Neighbours are taken on the side-effect's own rank, step and stream (when the profile has a Stream ID column), in
exact start-time order; a profile whose start times cannot order its rows leaves each kernel unplaced and says so.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sdcompile.core.profiles import headers as H
from sdcompile.core.profiles.catalog import KernelCatalog
from sdcompile.core.profiles.graph_sites import KernelSite, read_graph_sites
from sdcompile.core.profiles.ledger import APPEARED, MOVEMENT, TIME, Label, Ledger, LedgerRow, kernel_labels, row_labels
from sdcompile.core.profiles.movement import cell_bytes
from sdcompile.core.profiles.profile import Profile
from sdcompile.core.profiles.read import RankTable

STREAM = "Stream ID"
SIDE_EFFECT_ROLES = ("copy", "cast", "layout")
# where a side effect sits relative to the fused kernels
INPUT, OUTPUT, BETWEEN, ELSEWHERE, UNORDERED = "input side", "output side", "between fused kernels", "elsewhere", \
    "unordered"
R1, R2, R3, R4, R5 = "R1", "R2", "R3", "R4", "R5"
X_SIZED = 0.25  # a side effect moving at least this share of its fused neighbour's bytes works on x, not a table
# MindIE-SD's layer code prints `[residual_gate_add] fallback (ndim)` when its NPU branch gives up on an input
FALLBACK_LINE = re.compile(r"\[(?P<op>[A-Za-z0-9_.]+)\]\s*fallback\b(?P<why>[^\n]*)")


@dataclass(frozen=True)
class Placement:
    side: str  # INPUT, OUTPUT, BETWEEN or ELSEWHERE
    before: str  # the kernel most often right before it there, on its rank, step and stream ("" at a lane's start)
    after: str
    before_type: str  # their op types (what a report shows)
    after_type: str
    launches: float  # per step, on this side


@dataclass(frozen=True)
class SideEffect:
    row: LedgerRow
    cause: str  # R1, R2, R3, or "" (not one of them: where it sits says what it is)
    side: str  # where most of its new launches sit: INPUT, OUTPUT, BETWEEN, ELSEWHERE, or UNORDERED
    placements: tuple[Placement, ...]  # where its new launches sit, most first (at most PLACEMENTS)
    launches: float  # new launches per step placed (0: the profile's order could place none)
    per_site: float  # launches it gained per fused launch gained (nan when no fused launch was gained)
    size_ratio: float  # bytes per launch gained over a fused launch's (nan when shapes are not recorded)
    moved: float  # bytes per step its launches gained move (nan when shapes are not recorded)
    sites: tuple[KernelSite, ...] = ()  # the graph nodes its new launches ran as, most first (profiles of a
    # forward sdcompile compiled)


@dataclass(frozen=True)
class Cause:
    code: str  # R1..R5
    kernels: tuple[str, ...]  # the side effects (R1-R3), the fused kernels (R4, R5)
    launches: float  # per step: side-effect launches gained (R1-R3), fused launches short of hits (R4)
    per_site: float  # per fused launch gained (R1-R3); nan otherwise
    amount: float  # in the ledger's measure: what the side effects cost (R1-R3), fused minus replaced (R5)
    fallback_lines: tuple[str, ...] = ()  # R4: the kernels' own fallback prints, from the log


def place_side_effects(ledger: Ledger, off: Profile, on: Profile, catalog: KernelCatalog) -> tuple[SideEffect, ...]:
    """Every kernel of a side-effect role whose launches grew, with its most common neighbours in `on` (read with
    rows; without them every side effect is UNORDERED). The launches gained are told apart from the kernel's old
    ones by their input shapes and dtypes where the profile records them: the cast a replacement adds of a weight is
    not the cast of x the model always made. On a profile of a forward sdcompile compiled, each also names the graph
    nodes (and model lines) its new launches ran as."""
    fused_rows = [r for r in ledger.rows if r.role == "fused" and r.change == APPEARED]
    label = kernel_labels(off, on)
    fused_families = {f.name for f in catalog.families if f.role == "fused"}
    # every fused kernel of the on side, changed or not: a move between a new fused kernel and an old one is R3
    fused_keys = {label(g.key, g.op_type) for g in on.groups if g.family in fused_families}
    types = {label(g.key, g.op_type): g.op_type for g in on.groups}
    fused_gain = sum(r.delta_count for r in fused_rows)
    fused_size = _per_launch(fused_rows)
    wanted = [r for r in ledger.rows if r.change == APPEARED and r.role in SIDE_EFFECT_ROLES]
    on_rows, off_rows = ([_Rows(t, catalog, label) for t in p.tables if t.table.num_rows] for p in (on, off))
    keys = {r.key for r in wanted}
    gained = _gained(_launches(on_rows, keys), ledger.on_steps, _launches(off_rows, keys), ledger.off_steps)
    placements = _placements(on_rows, gained)
    sites = _sites(on_rows, gained, ledger.on_steps)
    out = []
    for row in wanted:
        mine = {sig: n for sig, n in gained.items() if sig[0] == row.key}
        seen = placements.get(row.key, Counter())
        where = _by_side(seen, fused_keys, types, ledger.on_steps)
        side = where[0].side if where else UNORDERED
        per_site = row.delta_count / fused_gain if fused_gain > 0 else math.nan
        # the size of the launches gained, against a fused launch's: a cast of x, or of a small table or weight
        count = sum(mine.values())
        moved = sum(n * _signature_bytes(sig) for sig, n in mine.items()) if count else math.nan
        size = moved / count / fused_size if count and fused_size and not math.isnan(fused_size) else math.nan
        out.append(SideEffect(row, _cause(row.role, {p.side for p in where}, size), side, where,
                              sum(seen.values()) / ledger.on_steps, per_site, size, moved, sites.get(row.key, ())))
    return tuple(out)


def fused_sites(ledger: Ledger, off: Profile, on: Profile,
                catalog: KernelCatalog) -> tuple[tuple[str, tuple[KernelSite, ...]], ...]:
    """The fused kernels that appeared, each with the graph nodes (and model lines) its launches ran as, when `on`
    is a profile of a forward sdcompile compiled; () otherwise."""
    keys = {r.key for r in ledger.rows if r.role == "fused" and r.change == APPEARED}
    label = kernel_labels(off, on)
    tables = [_Rows(t, catalog, label) for t in on.tables if t.table.num_rows]
    found = _sites(tables, {sig: 1.0 for sig in _launches(tables, keys)}, ledger.on_steps)
    return tuple((r.key, found[r.key]) for r in ledger.rows if r.key in keys and found.get(r.key))


_SEP = "\x1f"
Signature = tuple[str, str]  # (ledger label, "Input Shapes<SEP>Input Data Types" or "" when not recorded)


def _signature_bytes(sig: Signature) -> float:
    """Bytes one launch of this signature moves (nan when the profile records no shapes)."""
    shapes, _, dtypes = sig[1].partition(_SEP)
    return cell_bytes(shapes, dtypes) if sig[1] else math.nan


class _Rows:
    """One rank's rows as ledger labels and input signatures, coded once per distinct value."""

    def __init__(self, rank: RankTable, catalog: KernelCatalog, label: Label):
        self.graph = read_graph_sites(rank.rank.run_dir)
        table = self.table = rank.table
        self.codes, self.labels = row_labels(table, catalog, label)
        if H.INPUT_SHAPES in table.column_names and H.INPUT_DTYPES in table.column_names:
            text = [pc.fill_null(table[c].cast(pa.string()), "") for c in (H.INPUT_SHAPES, H.INPUT_DTYPES)]
            encoded = pc.dictionary_encode(pc.binary_join_element_wise(*text, _SEP)).combine_chunks()
            self.shape_codes, self.shapes = encoded.indices.to_numpy(), encoded.dictionary.to_pylist()
        else:
            self.shape_codes, self.shapes = np.zeros(table.num_rows, np.int64), [""]

    def signatures(self) -> np.ndarray:
        return self.codes.astype(np.int64) * len(self.shapes) + self.shape_codes

    def signature(self, code: int) -> Signature:
        return self.labels[code // len(self.shapes)], self.shapes[code % len(self.shapes)]


def _launches(tables: list[_Rows], keys: set[str]) -> Counter:
    """(label, input signature) -> launches, for the labels in `keys`."""
    out: Counter = Counter()
    for t in tables:
        codes, counts = np.unique(t.signatures(), return_counts=True)
        for code, n in zip(codes.tolist(), counts.tolist(), strict=True):
            sig = t.signature(code)
            if sig[0] in keys:
                out[sig] += n
    return out


def _gained(on: Counter, on_steps: int, off: Counter, off_steps: int) -> dict[Signature, float]:
    """The signatures launched more often per step with the fusion on, and by how much."""
    grew = {sig: n / on_steps - off.get(sig, 0) / off_steps for sig, n in on.items()}
    return {sig: g for sig, g in grew.items() if g > 0}


def _placements(tables: list[_Rows], gained: dict[Signature, float]) -> dict[str, Counter]:
    """label -> Counter of (label before, label after) over the launches of its gained signatures, within a rank,
    step and stream, in exact start-time order (a rank without usable start times is not placed)."""
    out: dict[str, Counter] = {}
    for t in tables:
        if "start_ns" not in t.table.column_names:
            continue
        sigs = t.signatures()
        unique = np.unique(sigs)
        grown = unique[[t.signature(c) in gained for c in unique.tolist()]] if len(unique) else unique
        if not len(grown):
            continue
        lane = _lane(t.table)
        order = np.lexsort((t.table["start_ns"].to_numpy(zero_copy_only=False), lane))
        codes, sigs, lane = t.codes[order], sigs[order], lane[order]
        for i in np.flatnonzero(np.isin(sigs, grown)).tolist():
            before = t.labels[codes[i - 1]] if i > 0 and lane[i - 1] == lane[i] else ""
            after = t.labels[codes[i + 1]] if i + 1 < len(codes) and lane[i + 1] == lane[i] else ""
            out.setdefault(t.labels[codes[i]], Counter())[(before, after)] += 1
    return out


def _sites(tables: list[_Rows], gained: dict[Signature, float], steps: int) -> dict[str, tuple[KernelSite, ...]]:
    """label -> the graph nodes the launches of its gained signatures ran as, most first, on the ranks whose profile
    ties rows to nodes (graph_sites.py)."""
    seen: dict[str, Counter] = {}
    for t in tables:
        if t.graph is None or not t.graph.nodes or "start_ns" not in t.table.column_names:
            continue
        sigs = t.signatures()
        unique = np.unique(sigs)
        grown = unique[[t.signature(c) in gained for c in unique.tolist()]] if len(unique) else unique
        starts = t.table["start_ns"].to_numpy(zero_copy_only=False)
        names = t.table[H.NAME]
        for i in np.flatnonzero(np.isin(sigs, grown)).tolist():
            node = t.graph.nodes.get((int(starts[i]), str(names[i])))
            if node is not None:
                seen.setdefault(t.labels[t.codes[i]], Counter())[node] += 1
    return {key: tuple(KernelSite(n.name, n.op, n.source, n.module_path, c / steps)
                       for n, c in nodes.most_common()) for key, nodes in seen.items()}


def _by_side(seen: Counter, fused_keys: set[str], types: dict[str, str], steps: int) -> tuple[Placement, ...]:
    """The new launches summed per side of the fused kernels, most first, each with its most common neighbours."""
    sides: dict[str, Counter] = {}
    for (before, after), n in seen.items():
        sides.setdefault(_side(before in fused_keys, after in fused_keys), Counter())[(before, after)] = n
    out = []
    for side, pairs in sides.items():
        (before, after), _ = pairs.most_common(1)[0]
        out.append(Placement(side, before, after, types.get(before, ""), types.get(after, ""),
                             sum(pairs.values()) / steps))
    return tuple(sorted(out, key=lambda p: -p.launches))


def _side(before_fused: bool, after_fused: bool) -> str:
    if before_fused and after_fused:
        return BETWEEN
    return INPUT if after_fused else (OUTPUT if before_fused else ELSEWHERE)


def _cause(role: str, sides: set[str], size: float) -> str:
    """From where the new launches sit: a cast beside a fused kernel is R1, a copy or move between two is R3, a copy
    right before one is R2. R1 and R2 are about x: a cast or copy of a small input (a weight, a table) is cheap and
    named by neither; an unknown size (no shapes in the profile) does not rule them out."""
    small = size < X_SIZED  # False when nan
    if role == "cast" and sides & {INPUT, OUTPUT, BETWEEN} and not small:
        return R1
    if role != "cast" and BETWEEN in sides:
        return R3
    return R2 if role != "cast" and INPUT in sides and not small else ""


def _per_launch(rows: list[LedgerRow]) -> float:
    count = sum(r.on_count for r in rows)
    return sum(r.on_bytes for r in rows) / count if count else math.nan


def _lane(table) -> np.ndarray:
    """One integer per row naming its (step, stream): neighbours are only looked for within one lane."""
    n = table.num_rows
    step = pc.fill_null(table[H.STEP], -1).to_numpy() if H.STEP in table.column_names else np.zeros(n, np.int64)
    if STREAM not in table.column_names:
        return step.astype(np.int64)
    stream = pc.dictionary_encode(table[STREAM].cast("string")).combine_chunks().indices.to_numpy()
    return step.astype(np.int64) * (int(stream.max(initial=0)) + 1) + stream


def causes(ledger: Ledger, effects: tuple[SideEffect, ...], hits: float | None,
           fallback_lines: tuple[str, ...] = ()) -> tuple[Cause, ...]:
    """R1-R3 from the placed side effects, R4 from the hits (per step) against the fused launches gained and from
    the kernels' fallback prints, R5 when no R1-R3 side effect explains a fused kernel outweighing its chain."""
    fused = [r for r in ledger.rows if r.role == "fused" and r.change == APPEARED]
    fused_gain = sum(r.delta_count for r in fused)
    out = []
    for code in (R1, R2, R3):
        mine = [e for e in effects if e.cause == code]
        if mine:
            launches = sum(e.row.delta_count for e in mine)
            out.append(Cause(code, tuple(e.row.key for e in mine), launches,
                             launches / fused_gain if fused_gain > 0 else math.nan,
                             sum(_added(ledger, e) for e in mine)))
    short = hits - fused_gain if hits is not None else 0.0
    if short > 0.5 or fallback_lines:
        out.append(Cause(R4, tuple(r.key for r in fused), max(short, 0.0), math.nan, math.nan, fallback_lines))
    if fused and not out:
        added = sum(_amount(ledger, r) for r in fused)
        removed = sum(-_amount(ledger, r) for r in ledger.rows if r.change != APPEARED)
        if added > removed:
            out.append(Cause(R5, tuple(r.key for r in fused), fused_gain, math.nan, added - removed))
    return tuple(out)


def _added(ledger: Ledger, effect: SideEffect) -> float:
    """What a side effect's new launches cost in the ledger's measure: their own bytes when the shapes tell them
    apart, else each at the kernel's average on the on side (the row's own delta would net them against the same
    kernel's launches that went elsewhere)."""
    row = effect.row
    if ledger.measure == MOVEMENT and not math.isnan(effect.moved):
        return effect.moved
    if row.on_count <= 0:
        return 0.0
    per_launch = _amount_on(ledger, row) / row.on_count
    return row.delta_count * per_launch


def _amount_on(ledger: Ledger, row: LedgerRow) -> float:
    if ledger.measure == TIME:
        return row.on_us
    return row.on_bytes if ledger.measure == MOVEMENT else row.on_count


def _amount(ledger: Ledger, row: LedgerRow) -> float:
    if ledger.measure == TIME:
        return row.delta_us
    return row.delta_bytes if ledger.measure == MOVEMENT else row.delta_count


def fallback_prints(log: Path) -> tuple[str, ...]:
    """The distinct `[op] fallback (...)` lines a run's log holds (MindIE-SD's layer code prints them when its NPU
    branch gives up on an input and runs eager)."""
    text = log.read_text(encoding="utf-8", errors="replace")
    return tuple(dict.fromkeys(m.group(0).strip() for m in FALLBACK_LINE.finditer(text)))
