"""What `sdcompile run` returns: each phase's outcome and the run's result, read by report.run."""

from __future__ import annotations

from dataclasses import dataclass

from sdcompile.core.environment import Versions


@dataclass(frozen=True)
class PhaseOutcome:
    number: int
    phase: str
    status: str  # pass | fail | info | skipped (decided not to run, with why) | kept (passed earlier) | not run
    gate: str  # what the phase must show for the run to go on
    summary: str
    device: str  # as the phase recorded it ("n/a" for phases that run no model)
    seconds: float  # 0 for kept and not-run phases
    command: str  # the same phase on its own, with the run's options
    evidence: tuple[str, ...]  # workspace-relative paths
    # the phase's own verdict (pass, fail, info or skipped), also when kept from an earlier run; None when not run
    verdict: str | None = None
    kept_seconds: float | None = None  # a kept phase: how long it took when it ran (None: not recorded)


@dataclass(frozen=True)
class RunResult:
    model: str
    op: str
    dtype: str
    device: str  # "npu", "cpu (emulated npu)" or "cpu"
    device_reason: str
    target: str  # the tree's root
    target_version: str
    target_source: str  # where the tree came from and whether it is the user's
    workspace: str
    pair_folder: str
    cwd: str  # the folder the printed commands are relative to
    phases: tuple[PhaseOutcome, ...]
    passed: bool  # every gate that ran passed (a dry run runs phases 1-3)
    resumed_from: str | None  # the first phase this run ran (None: all kept from earlier runs)
    stopped_at: str | None  # the phase whose gate failed
    stop_reason: str | None
    next_commands: tuple[str, ...]
    resume_command: str  # this run again: resumes where it stopped
    not_exercised: tuple[str, ...]  # what this machine could not run
    report: str  # the Markdown report ("" for a dry run, which writes none)
    seconds: float
    versions: Versions  # torch, torch_npu (real or emulated, its behaviours), diffusers, MindIE-SD, Python
    dry_run: bool = False
    previews: tuple[str, ...] = ()  # a dry run: the diffs of the edits it did not make
    dead_end: bool = False  # the phase it stopped at stops the same way when run again (no resume is offered)
    findings: tuple[str, ...] = ()  # facts passing gates found about the model (the compile's own copy inflation)
