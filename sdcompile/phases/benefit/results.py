"""What `sdcompile benefit` returns: the ledger of one fusion off vs on, its side effects placed, their causes, and
the verdict the ledger supports."""

from __future__ import annotations

from dataclasses import dataclass

from sdcompile.core.environment import Versions
from sdcompile.core.profiles.graph_sites import KernelSite
from sdcompile.core.profiles.ledger import Ledger
from sdcompile.core.profiles.profile import ProfileSummary
from sdcompile.core.profiles.side_effects import Cause, SideEffect

# verdicts: the fusion gains; loses within --max-regression; loses beyond it; claims more than its region holds
# (the Amdahl self-check); no fused kernel appeared, so there is nothing to weigh
GAINS, WITHIN, LOSES, BOOKKEEPING, NO_FUSION = "gains", "within tolerance", "loses", "bookkeeping error", "no fusion"
PASSING = (GAINS, WITHIN)
# the loss, in percent of the off side's step, that still passes: the recipe's benchmark discipline calls a change
# under 3% of the timed step noise (benchmark-dev's guide; a loss measured on another denominator is not comparable)
DEFAULT_MAX_REGRESSION = 3.0
# where the pattern hits R4 weighs come from: the option, or the fused calls the profiled compiled graphs made
# (graph_sites.py: counted per run of each region, so a recompile during warm-up is not counted twice)
HITS_OPTION, HITS_CAPTURED = "--hits", "the profiled graphs' fused calls"


@dataclass(frozen=True)
class BenefitReport:
    ops: tuple[str, ...]  # the fused ops weighed
    device: str  # where the two profiles ran ("npu", "cpu (emulated npu)", ...)
    verdict: str  # one of GAINS, WITHIN, LOSES, BOOKKEEPING, NO_FUSION
    ledger: Ledger
    side_effects: tuple[SideEffect, ...]
    # the fused kernels that appeared, each with the graph nodes (and model lines) it ran as, on profiles of a
    # forward sdcompile compiled; the side effects carry theirs
    fused_sites: tuple[tuple[str, tuple[KernelSite, ...]], ...]
    causes: tuple[Cause, ...]
    hits: float | None  # pattern replacements per step the on side added, when known
    hits_from: str  # where `hits` comes from: HITS_OPTION, HITS_CAPTURED, or "" (unknown)
    max_regression: float  # percent of the off side's step (in the ledger's measure) a loss may take
    off: ProfileSummary
    on: ProfileSummary
    left_out: tuple[str, ...]  # with --model: the groups the off side was compiled without
    raising: tuple[str, ...]  # ... and the tree's groups that raise on this model, left out of both sides
    catalog: tuple[str, ...]
    notes: tuple[str, ...]
    versions: Versions

    @property
    def passed(self) -> bool:
        return self.verdict in PASSING

    @property
    def share(self) -> float:
        """The net as a share of the off side's step (negative: the step got lighter)."""
        total = self.ledger.step_total
        return self.ledger.net / total if total else 0.0
