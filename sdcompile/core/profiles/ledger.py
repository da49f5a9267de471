"""The benefit ledger of a fusion: two profiles of one model, the fusion off and on (or eager and compiled), compared
per step. Kernels whose launches fell are what the fusion removed ("vanished"), kernels whose launches rose are what
it added ("appeared": its fused kernel and any copy, cast or move it brought); the net is appeared minus vanished.

The region is what a fusion of vector ops can remove at most: the off side's kernels but its matmuls, attention,
convolutions and communication (its chain's own copies, casts and any other group's fused kernel that took part of
it are in). A gain above it is a bookkeeping error (two runs that launch other work, a step counted twice), never a
result: `Ledger.over_ceiling` says so and the benefit step fails closed on it.

Launch counts are exact on any device; kernel time means something on an NPU only; the data moved (from the rows'
shapes and dtypes, `movement`) is what a CPU capture's gain is weighed by."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sdcompile.core.profiles import headers as H
from sdcompile.core.profiles.catalog import FusedOp, KernelCatalog
from sdcompile.core.profiles.movement import row_bytes
from sdcompile.core.profiles.profile import Profile

APPEARED, VANISHED, UNCHANGED = "appeared", "vanished", "unchanged"
# kernel families (by catalog role) no fusion of elementwise chains removes: outside the region
OUTSIDE_REGION = ("matmul", "attention", "conv", "communication")
TIME, MOVEMENT, LAUNCHES = "kernel time", "data moved", "launches"  # what a ledger weighs by


@dataclass(frozen=True)
class LedgerRow:
    """One kernel (by its key) on both sides, per step."""

    key: str
    op_type: str
    family: str
    role: str  # the family's role in the catalog: fused, copy, cast, layout, eager_chain, elementwise, ...
    off_count: float
    on_count: float
    off_us: float
    on_us: float
    off_bytes: float  # estimated bytes moved per step; nan when the rows give no shapes
    on_bytes: float

    @property
    def change(self) -> str:
        if self.on_count > self.off_count:
            return APPEARED
        return VANISHED if self.on_count < self.off_count else UNCHANGED

    @property
    def delta_count(self) -> float:
        return self.on_count - self.off_count

    @property
    def delta_us(self) -> float:
        return self.on_us - self.off_us

    @property
    def delta_bytes(self) -> float:
        return self.on_bytes - self.off_bytes


@dataclass(frozen=True)
class FamilyLedger:
    family: str
    title: str
    appeared_count: float
    appeared_us: float
    vanished_count: float
    vanished_us: float

    @property
    def net_us(self) -> float:
        return self.appeared_us - self.vanished_us


@dataclass(frozen=True)
class Weight:
    """The ledger's totals per step in one measure: what appeared, what vanished, the net (appeared minus vanished:
    below zero the fusion gains), the ceiling (the region: the most the fusion can remove) and the off side's step."""

    appeared: float
    vanished: float
    ceiling: float
    step: float  # nan when the measure is not recorded (no shapes)

    @property
    def net(self) -> float:
        return self.appeared - self.vanished


@dataclass(frozen=True)
class Ledger:
    rows: tuple[LedgerRow, ...]  # every kernel whose launches changed, largest time change first
    families: tuple[FamilyLedger, ...]
    ops: tuple[str, ...]  # the fused ops weighed (--op, or those whose fused kernel grew)
    off_steps: int
    on_steps: int
    measure: str  # what the verdict weighs by: TIME on an NPU profile, else MOVEMENT when the rows give shapes, else
    # LAUNCHES
    time: Weight  # us per step
    movement: Weight  # bytes per step (nan without shapes)
    launches: Weight  # kernel launches per step
    drift_us: float  # time change of kernels launched as often on both sides (noise, or a slower/faster kernel)
    net: float  # appeared minus vanished in `measure`
    step_total: float  # the off side's step in `measure`: the denominator of --max-regression
    ceiling: float  # the region in `measure`: the off side's step but its matmul, attention, conv, communication

    @property
    def over_ceiling(self) -> bool:
        """A gain larger than everything the region holds: the ledger counts what the fusion cannot have removed (the
        recipe's Amdahl self-check)."""
        return -self.net > self.ceiling * (1 + 1e-9) + 1e-9


Label = Callable[[str, str], str]


def kernel_labels(off: Profile, on: Profile) -> Label:
    """(kernel key, op type) -> the ledger's label for it: the key, or `key [op type]` for a key launched as several
    op types (a CPU capture's aten::copy_ is a Cast between dtypes and a ViewCopy otherwise: R1 and R2 apart)."""
    types: dict[str, set[str]] = defaultdict(set)
    for profile in (off, on):
        for g in profile.groups:
            types[g.key].add(g.op_type)
    split = {k for k, t in types.items() if len(t) > 1}
    return lambda key, op_type: f"{key} [{op_type}]" if key in split else key


def row_labels(table: pa.Table, catalog: KernelCatalog, label: Label) -> tuple[np.ndarray, list[str]]:
    """Each row's ledger label, as (codes per row, labels): classified once per distinct (Name, Type)."""
    n = table.num_rows
    types = table[H.TYPE] if H.TYPE in table.column_names else pa.nulls(n, pa.string())
    joined = pc.binary_join_element_wise(table[H.NAME].cast(pa.string()), pc.fill_null(types.cast(pa.string()), ""),
                                         "\x1f")
    encoded = pc.dictionary_encode(joined).combine_chunks()
    labels = []
    for pair in encoded.dictionary.to_pylist():
        name, _, op_type = pair.partition("\x1f")
        c = catalog.classify(name, op_type or None, None)
        labels.append(label(c.key, c.op_type))
    return encoded.indices.to_numpy(), labels


def build_ledger(off: Profile, on: Profile, catalog: KernelCatalog, ops: tuple[FusedOp, ...]) -> Ledger:
    """`off` and `on` must be read with rows (`load_profile(rows=True)`) for the data moved; without rows it is
    nan and the ledger weighs launches (or time, on an NPU)."""
    roles = {f.name: f.role for f in catalog.families}
    label = kernel_labels(off, on)
    off_steps, on_steps = _steps(off), _steps(on)
    sides = [_per_key(p, n, label) for p, n in ((off, off_steps), (on, on_steps))]
    moved = [_bytes_per_key(p, n, catalog, label) for p, n in ((off, off_steps), (on, on_steps))]
    rows, drift = [], 0.0
    for key in sorted(set(sides[0]) | set(sides[1])):
        (oc, ou, ot, of), (nc, nu, nt, nf) = (s.get(key, (0.0, 0.0, "", "")) for s in sides)
        row = LedgerRow(key, ot or nt, of or nf, roles.get(of or nf, ""), oc, nc, ou, nu, moved[0].get(key, 0.0),
                        moved[1].get(key, 0.0))
        if row.change == UNCHANGED:
            drift += row.delta_us
        else:
            rows.append(row)
    rows.sort(key=lambda r: (-abs(r.delta_us), -abs(r.delta_count), r.key))
    regional = [k for k, v in sides[0].items() if roles.get(v[3]) not in OUTSIDE_REGION]
    shapes = bool(moved[0] and moved[1])
    weights = {
        TIME: _weight(rows, "delta_us", sum(sides[0][k][1] for k in regional), off.kernel_us / off_steps),
        MOVEMENT: _weight(rows, "delta_bytes", sum(moved[0].get(k, 0.0) for k in regional),
                          sum(moved[0].values()) if shapes else math.nan),
        LAUNCHES: _weight(rows, "delta_count", sum(sides[0][k][0] for k in regional),
                          sum(v[0] for v in sides[0].values())),
    }
    measure = TIME if off.device == "npu" and on.device == "npu" else (MOVEMENT if shapes else LAUNCHES)
    chosen = weights[measure]
    return Ledger(rows=tuple(rows), families=_families(rows, catalog), ops=tuple(op.name for op in ops),
                  off_steps=off_steps, on_steps=on_steps, measure=measure, time=weights[TIME],
                  movement=weights[MOVEMENT], launches=weights[LAUNCHES], drift_us=drift, net=chosen.net,
                  step_total=chosen.step, ceiling=chosen.ceiling)


def _weight(rows: list[LedgerRow], field: str, ceiling: float, step: float) -> Weight:
    appeared = sum(getattr(r, field) for r in rows if r.change == APPEARED)
    vanished = -sum(getattr(r, field) for r in rows if r.change == VANISHED)
    return Weight(float(appeared), float(vanished), float(ceiling), float(step))


def _steps(profile: Profile) -> int:
    """Steps the profile holds (1 when it records none, or one was selected): every figure is per step."""
    return 1 if profile.step is not None else max(len(profile.steps), 1)


def _per_key(profile: Profile, steps: int, label: Label) -> dict[str, tuple[float, float, str, str]]:
    """label -> (launches, us, op type, family) per step, over every rank."""
    acc: dict[str, list] = defaultdict(lambda: [0, 0.0, "", ""])
    for g in profile.groups:
        slot = acc[label(g.key, g.op_type)]
        slot[0] += g.count
        slot[1] += g.total_us
        slot[2] = slot[2] or g.op_type
        slot[3] = slot[3] or g.family
    return {k: (c / steps, u / steps, t, f) for k, (c, u, t, f) in acc.items()}


def _bytes_per_key(profile: Profile, steps: int, catalog: KernelCatalog, label: Label) -> dict[str, float]:
    """label -> estimated bytes moved per step; empty when the profile's rows were not kept or give no shapes."""
    if not profile.tables or not all(H.INPUT_SHAPES in t.table.column_names for t in profile.tables):
        return {}
    out: dict[str, float] = defaultdict(float)
    for t in profile.tables:
        moved = row_bytes(t.table)
        if np.isnan(moved).all():
            return {}
        codes, labels = row_labels(t.table, catalog, label)
        sums = np.bincount(codes, weights=np.nan_to_num(moved), minlength=len(labels))
        for name, total in zip(labels, sums.tolist(), strict=True):
            out[name] += total / steps
    return dict(out)


def _families(rows: list[LedgerRow], catalog: KernelCatalog) -> tuple[FamilyLedger, ...]:
    titles = {f.name: f.title for f in catalog.families}
    acc: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
    for r in rows:
        slot = acc[r.family]
        if r.change == APPEARED:
            slot[0] += r.delta_count
            slot[1] += r.delta_us
        else:
            slot[2] -= r.delta_count
            slot[3] -= r.delta_us
    out = [FamilyLedger(f, titles.get(f, f), *v) for f, v in acc.items()]
    return tuple(sorted(out, key=lambda f: (-abs(f.net_us), f.family)))
