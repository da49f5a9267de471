"""Eager vs compile kernel diff: by kernel name (the recipe's method), by op type and by family, and for one fused
op whether its kernel appeared and its eager chain went away."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from sdcompile.profiles.catalog import FusedOp
from sdcompile.profiles.profile import KernelGroup, Profile


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
    by_name: tuple[DiffRow, ...]  # sorted by |time delta|, largest first
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
    by_name = _rows(eager.groups, compiled.groups, lambda g: g.name, True)
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


def check_op(op: FusedOp, eager: Profile, compiled: Profile) -> OpCheck:
    """Did `op`'s fused kernel appear in the compiled run, and did its eager chain shrink?"""
    e = _collect(eager.groups, lambda g: g.op_type)
    c = _collect(compiled.groups, lambda g: g.op_type)

    def counts(types: tuple[str, ...]) -> tuple[TypeCount, ...]:
        return tuple(TypeCount(t, e[t][0] if t in e else 0, c[t][0] if t in c else 0) for t in types)

    fused, chain = counts(op.fused_types), counts(op.eager_chain)
    sig = counts(op.signature)
    fe, fc = sum(t.eager_count for t in fused), sum(t.compile_count for t in fused)
    se, sc = sum(t.eager_count for t in sig), sum(t.compile_count for t in sig)
    fused_names = "/".join(op.fused_types)
    sig_names = "/".join(op.signature) or "none"
    if fc == 0:
        verdict = "fail"
        reason = (f"no {fused_names} kernel in the compiled profile: the pattern did not replace the model's "
                  f"{op.title} (check layer 1 hits, then `sdcompile debug`)")
    elif fc > fe or sc < se:
        verdict = "pass"
        grew = f"{fused_names} {fe} -> {fc}"
        shrank = (f"eager-chain signature ({sig_names}) {se} -> {sc}" + (" (gone)" if sc == 0 else ""))
        reason = f"fused kernel {'appeared' if fe == 0 else 'grew'}: {grew}; {shrank}"
    else:
        verdict = "fail"
        reason = (f"{fused_names} is present ({fe} eager -> {fc} compiled) but the compiled run launches no more of "
                  f"it and its eager chain ({sig_names} {se} -> {sc}) did not shrink: the fused kernels were already "
                  "there in eager, the pattern changed nothing")
    return OpCheck(op.name, op.title, fused, chain, op.signature, fe, fc, se, sc, verdict, reason)
