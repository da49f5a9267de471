"""What `sdcompile copy-audit` returns: the copy breakdowns, the gate and the recommendation."""

from __future__ import annotations

from dataclasses import dataclass

from sdcompile.core.environment import Versions
from sdcompile.core.profiles.advice import Recommendation
from sdcompile.core.profiles.copies import CopyBreakdown, Inflation
from sdcompile.core.profiles.profile import ProfileSummary


@dataclass(frozen=True)
class Gate:
    max_inflation: float | None
    metric: str  # "time" or "count"
    value: float
    verdict: str  # "pass", "fail", or "not set"
    metric_from: str = "--inflation-metric"  # why this metric: the option, or what `auto` saw in the profiles
    undefined: bool = False  # 0 -> 0 by this metric: no copies on either side, no ratio (value 0, shown n/a)


@dataclass(frozen=True)
class CopyAuditReport:
    device: str
    verdict: str  # the gate's verdict: "pass", "fail" or "info" (no --max-inflation)
    eager: ProfileSummary
    compiled: ProfileSummary
    eager_copies: CopyBreakdown
    compile_copies: CopyBreakdown
    inflation: Inflation
    gate: Gate
    recommendation: Recommendation
    catalog: tuple[str, ...]
    notes: tuple[str, ...]
    versions: Versions  # of the auditing process (the profiles' own run may have had others)
