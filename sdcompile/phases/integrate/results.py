"""What `sdcompile integrate` returns: the three layers, each with its verdict and evidence, and the report."""

from __future__ import annotations

from dataclasses import dataclass

from sdcompile.core.environment import Versions
from sdcompile.core.profiles.compile_log import CompileLog
from sdcompile.core.profiles.diff import KernelDiff, OpCheck
from sdcompile.core.profiles.profile import ProfileSummary
from sdcompile.testing.model_runs import ModelCompile


@dataclass(frozen=True)
class Layer:
    number: int
    name: str
    verdict: str  # "pass", "fail", "unconfirmed" (evidence inconclusive) or "skipped" (no evidence given)
    evidence: str  # where the verdict comes from
    detail: str


@dataclass(frozen=True)
class IntegrateReport:
    op: str | None
    device: str  # where the compared runs ran: "npu", "cpu (emulated npu)", "cpu", or "n/a" without profiles
    verdict: str  # "pass" (all three layers pass), "fail" (any layer fails), "incomplete" (none failed, not all ran)
    layers: tuple[Layer, ...]
    eager: ProfileSummary | None
    compiled: ProfileSummary | None
    diff: KernelDiff | None
    op_check: OpCheck | None
    log: CompileLog | None
    model_compile: ModelCompile | None  # the --model run behind layers 1 and 3
    catalog: tuple[str, ...]
    notes: tuple[str, ...]
    versions: Versions  # of this process; MindIE-SD only when --model compiled through the target
