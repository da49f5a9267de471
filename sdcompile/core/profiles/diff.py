"""Eager vs compile kernel diff: by kernel name (the recipe's method), by op type and by family, and for one fused
op whether its kernel appeared and its eager chain went away."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from sdcompile.core.profiles.catalog import FusedOp
from sdcompile.core.profiles.profile import KernelGroup, Profile

# check_op outcomes: pass when the fused kernel appeared or grew and the chain went away in proportion to it, or
# when the model was known to call the fused op itself and both runs launch it with no chain left (FUSED_IN_EAGER).
REPLACED, NO_FUSED, UNCHANGED, CHAIN_STAYED, TOO_LITTLE, CHAIN_ONLY, FUSED_IN_EAGER = (
    "replaced", "no fused kernel", "unchanged", "chain stayed", "chain shrank too little", "chain shrank alone",
    "fused in eager")
OUTCOMES = (REPLACED, NO_FUSED, UNCHANGED, CHAIN_STAYED, TOO_LITTLE, CHAIN_ONLY, FUSED_IN_EAGER)
# A fused kernel stands for one chain instance, so each signature type should drop by about the growth; half of it
# leaves room for sites the pattern does not cover while catching two runs that merely launch different work.
MIN_CHAIN_RATIO = 0.5


@dataclass(frozen=True)
class DiffRow:
    key: str  # kernel name, op type or family
    op_type: str
    family: str
    eager_count: int
    eager_us: float
    compile_count: int
    compile_us: float
    status: str  # "eager only", "compile only", "both"

    @property
    def delta_us(self) -> float:
        return self.compile_us - self.eager_us

    @property
    def delta_count(self) -> int:
        return self.compile_count - self.eager_count


@dataclass(frozen=True)
class KernelDiff:
    by_name: tuple[DiffRow, ...]  # by kernel key (the Name, HCCL run numbers dropped); |time delta|, largest first
    by_type: tuple[DiffRow, ...]
    by_family: tuple[DiffRow, ...]
    eager_only: tuple[str, ...]  # kernel names launched only in eager (fused away or removed)
    compile_only: tuple[str, ...]  # kernel names launched only when compiled (fused kernels, new copies)
    eager_us: float
    compile_us: float


@dataclass(frozen=True)
class TypeCount:
    op_type: str
    eager_count: int
    compile_count: int


@dataclass(frozen=True)
class OpCheck:
    op: str
    title: str
    fused: tuple[TypeCount, ...]
    chain: tuple[TypeCount, ...]
    signature: tuple[str, ...]
    fused_eager: int
    fused_compile: int
    signature_eager: int
    signature_compile: int
    verdict: str  # "pass" or "fail"
    reason: str
    outcome: str = ""  # one of OUTCOMES: what the counts showed
    chain_drop: int = 0  # chain instances gone: the largest drop of one signature type, eager -> compile
    min_ratio: float = MIN_CHAIN_RATIO  # least chain_drop / fused growth that passes



def _collect(groups: Iterable[KernelGroup], key: Callable[[KernelGroup], str]) -> dict[str, list]:
    """key -> [count, us, op types, families]; a kernel name launched as several op types (CPU aten::copy_ as
    ViewCopy and Cast, or Type N/A on some rows) lists them all, joined with '/'."""
    acc: dict[str, list] = defaultdict(lambda: [0, 0.0, "", ""])
    for g in groups:
        slot = acc[key(g)]
        slot[0] += g.count
        slot[1] += g.total_us
        slot[2] = _join(slot[2], g.op_type)
        slot[3] = _join(slot[3], g.family)
    return acc


def _join(a: str, b: str) -> str:
    parts = {p for p in (*a.split("/"), *b.split("/")) if p}
    return "/".join(sorted(parts))


def _rows(eager: Iterable[KernelGroup], compiled: Iterable[KernelGroup], key, label_type: bool) -> list[DiffRow]:
    e, c = _collect(eager, key), _collect(compiled, key)
    rows = []
    for k in set(e) | set(c):
        ec, eu, et, ef = e.get(k, [0, 0.0, "", ""])
        cc, cu, ct, cf = c.get(k, [0, 0.0, "", ""])
        status = "both" if ec and cc else ("eager only" if ec else "compile only")
        rows.append(DiffRow(k, _join(et, ct) if label_type else "", _join(ef, cf), ec, eu, cc, cu, status))
    rows.sort(key=lambda r: (-abs(r.delta_us), -abs(r.delta_count), r.key))
    return rows


def kernel_diff(eager: Profile, compiled: Profile) -> KernelDiff:
    by_name = _rows(eager.groups, compiled.groups, lambda g: g.key, True)
    by_type = _rows(eager.groups, compiled.groups, lambda g: g.op_type, True)
    by_family = _rows(eager.groups, compiled.groups, lambda g: g.family, False)
    return KernelDiff(
        by_name=tuple(by_name),
        by_type=tuple(by_type),
        by_family=tuple(by_family),
        eager_only=tuple(sorted(r.key for r in by_name if r.status == "eager only")),
        compile_only=tuple(sorted(r.key for r in by_name if r.status == "compile only")),
        eager_us=eager.kernel_us,
        compile_us=compiled.kernel_us,
    )


def check_op(op: FusedOp, eager: Profile, compiled: Profile, fused_by_model: bool = False) -> OpCheck:
    """Did `op`'s fused kernel appear (or grow) in the compiled run, and did its eager chain go away in proportion?
    Two ranks or stages of one eager run can differ in fused-kernel counts with the chain unchanged: that is not a
    replacement, so growth alone does not pass. `fused_by_model`: the model calls the fused op itself at every site
    (scaffold found it so; diffusers' NPU branch), so the same fused launches on both sides and no more of the
    chain's signature compiled than eager (what is left is other code's: HunyuanVideo's scalar powers) is what a
    right compile shows; unknown that, two such runs are a pattern that changed nothing."""
    e = _collect(eager.groups, lambda g: g.op_type)
    c = _collect(compiled.groups, lambda g: g.op_type)

    def counts(types: tuple[str, ...]) -> tuple[TypeCount, ...]:
        return tuple(TypeCount(t, e[t][0] if t in e else 0, c[t][0] if t in c else 0) for t in types)

    qualified = _qualified_counts(op, eager, compiled)
    fused, chain = counts(op.fused_types), counts(op.eager_chain) + qualified
    sig = counts(op.signature) + qualified
    signature = (*op.signature, *(t.op_type for t in qualified))
    fe, fc = sum(t.eager_count for t in fused), sum(t.compile_count for t in fused)
    se, sc = sum(t.eager_count for t in sig), sum(t.compile_count for t in sig)
    drop = max((t.eager_count - t.compile_count for t in sig), default=0)
    growth = fc - fe
    if fc == 0:
        outcome = NO_FUSED
    elif growth == 0 and sc <= se and fused_by_model:  # signature kernels left are other code's, not its sites
        outcome = FUSED_IN_EAGER
    elif growth <= 0:
        outcome = CHAIN_ONLY if sc < se else UNCHANGED
    elif (se and sc == 0) or drop >= MIN_CHAIN_RATIO * growth:
        outcome = REPLACED
    else:
        outcome = CHAIN_STAYED if drop <= 0 else TOO_LITTLE
    verdict = "pass" if outcome in (REPLACED, FUSED_IN_EAGER) else "fail"
    return OpCheck(op.name, op.title, fused, chain, signature, fe, fc, se, sc, verdict,
                   _reason(op, signature, outcome, fe, fc, se, sc, drop), outcome, max(drop, 0))


def _qualified_counts(op: FusedOp, eager: Profile, compiled: Profile) -> tuple[TypeCount, ...]:
    """The signature's kernels that count only with certain inputs: complex ones (a complex RoPE's Mul, from the
    rows' Input Data Types) or of rank 5 or more (a rotation-matrix RoPE's Muls, from their Input Shapes)."""
    def launches(profile: Profile, op_type: str, field: str) -> int:
        return sum(getattr(g, field) for g in profile.groups if g.op_type == op_type)

    return tuple(TypeCount(f"{t} {label}", launches(eager, t, field), launches(compiled, t, field))
                 for types, label, field in ((op.complex_signature, "on complex inputs", "complex_count"),
                                             (op.high_rank_signature, "on rank-5+ inputs", "high_rank_count"))
                 for t in types)


def _reason(op: FusedOp, signature: tuple[str, ...], outcome: str, fe: int, fc: int, se: int, sc: int,
            drop: int) -> str:
    fused = "/".join(op.fused_types)
    sig = f"eager-chain signature ({'/'.join(signature) or 'none'}) {se} -> {sc}"
    if outcome == NO_FUSED:
        return (f"no {fused} kernel in the compiled profile: the pattern did not replace the model's {op.title} "
                "(check layer 1 hits, then `sdcompile debug`)")
    if outcome == FUSED_IN_EAGER:
        others = ("no eager chain on either side" if se == 0 else
                  "the chain's kernels on either side are other code's: scaffold found every site fused")
        return (f"fused by the model: {fused} {fe} eager -> {fc} compiled, {others} ({sig}); the model calls the "
                "fused op itself, so there was nothing for a pattern to replace")
    if outcome == UNCHANGED:
        return (f"{fused} is present ({fe} eager -> {fc} compiled) but the compiled run launches no more of it and "
                f"its {sig} did not shrink: the fused kernels were already there in eager, the pattern changed nothing")
    if outcome == CHAIN_ONLY:
        return (f"the {sig} shrank but {fused} did not grow ({fe} -> {fc}): something else removed the chain, not "
                f"this op's pattern")
    if outcome == REPLACED:
        grew = "appeared" if fe == 0 else "grew"
        return f"fused kernel {grew}: {fused} {fe} -> {fc} (+{fc - fe}); {sig}" + (" (gone)" if sc == 0 else "")
    return (f"{fused} grew {fe} -> {fc} (+{fc - fe}) but the {sig} dropped by {max(drop, 0)} chain(s), less than "
            f"{MIN_CHAIN_RATIO:g} per fused kernel gained: the two runs launch different work (other ranks, stages "
            "or inputs), not a replacement")
