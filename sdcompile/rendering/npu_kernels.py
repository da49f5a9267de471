"""How fused-op calls fare on the NPU's kernels (core/target/kernel_sites.py), in words: shared by verify, integrate
and run. Sites with the same op, verdict, message and operands are one entry listing every source line."""

from __future__ import annotations

from collections.abc import Sequence

from sdcompile.core.npu.kernel_check import KernelVerdict
from sdcompile.core.target.kernel_sites import SiteKernel

_PLURAL = {
    KernelVerdict.RAISES: "raise on the NPU",
    KernelVerdict.FALLS_BACK: "fall back on the NPU",
    KernelVerdict.DIFFERS: "differ on the NPU",
    KernelVerdict.NOT_RUN: "were not run on the NPU's kernel",
}
_WHAT = {
    KernelVerdict.RAISES: "raises on the NPU",
    KernelVerdict.FALLS_BACK: "falls back on the NPU (no fused kernel runs)",
    KernelVerdict.DIFFERS: "differs on the NPU",
    KernelVerdict.NOT_RUN: "not run on the NPU's kernel",
}


def fix(verdict: KernelVerdict, group: str | None, flag: str | None) -> str:
    """What to do about a site with `verdict` that `group` (registered under `flag`) produced."""
    if verdict is KernelVerdict.NOT_RUN:
        return "install the kernels extra (pip install 'sdcompile[kernels]') to run the target's Triton kernels"
    who = group or "the group"
    off = (f"; until then turn it off for this model: CompilationConfig.fusion_patterns.{flag} = False"
           if flag else "")
    if verdict is KernelVerdict.FALLS_BACK:
        return (f"{who} matches a chain the fused op does not take here: narrow its extra_check to the operands the "
                f"kernel runs (or register a group for this model before it){off}")
    return (f"add a shape guard for these operands to {who}'s extra_check, or register a group specific to this "
            f"model before it{off}")


def grouped(sites: Sequence[SiteKernel]) -> list[tuple[SiteKernel, list[str]]]:
    """Failing sites folded by (op, verdict, message, operands): the first of each, and every source of the fold."""
    folds: dict[tuple, tuple[SiteKernel, list[str]]] = {}
    for site in sites:
        if site.passed:
            continue
        c = site.check
        key = (c.op, c.verdict, c.message, c.operands)
        first, sources = folds.setdefault(key, (site, []))
        where = site.source or site.module_path or site.node
        if where not in sources:
            sources.append(where)
    return list(folds.values())


def summary(sites: Sequence[SiteKernel]) -> str:
    """One clause for a verdict line, on the calls that are wrong on the NPU (raise or differ), else on those that
    fall back: "2 fused call(s) raise on the NPU (mindiesd::residual_gate_add: ValueError: ...)"."""
    failing = [s for s in sites if not s.correct] or [s for s in sites if s.check.verdict is KernelVerdict.FALLS_BACK]
    if not failing:
        return ""
    first = failing[0].check
    return f"{len(failing)} fused call(s) {_PLURAL[first.verdict]} ({first.op}: {first.message})"


def lines(sites: Sequence[SiteKernel], group: str | None = None, flag: str | None = None) -> list[str]:
    """Plain lines (no markup) describing every failing or unjudged site, each fold with its fix."""
    out = []
    for site, sources in grouped(sites):
        c = site.check
        operands = ", ".join(o.describe() for o in c.operands)
        out.append(f"{c.op} {_WHAT[c.verdict]}: {c.message}")
        if operands:
            out.append(f"  operands: {operands}" + (f" (bound by {site.pattern})" if site.pattern else ""))
        if c.kernels:
            out.append(f"  kernel: {', '.join(c.kernels)}" + (f"; contract {c.contract}" if c.contract else ""))
        out += [f"  at {where}" for where in sources]
        out.append(f"  fix: {fix(c.verdict, group, flag)}")
    return out
