"""What `sdcompile profile` returns (its own run or the NPU branch in phases.profile_npu)."""

from __future__ import annotations

from dataclasses import dataclass

from sdcompile.core.environment import Versions


@dataclass(frozen=True)
class ProfileReport:
    model: str
    mode: str
    backend: str  # "none" for eager
    device: str  # "npu", "cpu (emulated npu)" or "cpu"
    source: str  # what made the profile
    run_dir: str
    kernel_details: str
    rows: int
    steps: int
    seconds: float  # wall time of the profiled steps
    pattern_hits: int | None  # replacements while compiling (compile mode)
    pass_log_counts: tuple[int, ...]
    dry_run: bool
    notes: tuple[str, ...]
    versions: Versions | None = None  # set by profile() on every report it returns
