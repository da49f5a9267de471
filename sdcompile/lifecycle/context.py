"""What the steps of `sdcompile run` share: a step's outcome, what scaffold decided, and the run's context."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sdcompile.lifecycle.commands import Commands
from sdcompile.lifecycle.options import RunOptions
from sdcompile.phases.scaffold.facts import ScaffoldFacts, pair_facts

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Step:
    """A phase's outcome in the pipeline: `verdict` is pass, fail, info or skipped (pass/info/skipped go on)."""

    verdict: str
    summary: str
    why: str = ""  # when it fails: why the run stops here
    next_commands: tuple[str, ...] = ()
    dead_end: bool = False  # it fails: running again stops here the same way (no resume is offered)
    # it passes, with a fact about the model the run's verdict line repeats (the compile's own copy inflation); its
    # next_commands show it
    finding: str = ""


@dataclass
class RunContext:
    """What the steps share: the run's inputs, where things are, and what earlier phases found."""

    options: RunOptions  # the run's options (the phases' inputs)
    model_name: str  # the workspace label (zoo name, or <file stem>-<factory>)
    tree: object  # TargetTree
    ws: object  # Workspace
    device: object  # DeviceInfo
    run_dir: Path
    commands: Commands
    say: Progress
    scaffold: ScaffoldFacts | None = None
    notes: list[str] = field(default_factory=list)
    previews: list[str] = field(default_factory=list)  # unified diffs of the edits a dry run did not make
    without_op_profiled: bool = False  # this run profiled its compile without the op's groups (phase 6 or 7)
    # the HTML pages this run wrote (file name -> writer taking the links): run_pages.py writes them again as the
    # run adds pages
    page_writers: dict[str, Callable] = field(default_factory=dict)

    @property
    def repo(self) -> Path:
        return self.tree.root

    @property
    def pair_dir(self) -> Path:
        return self.ws.pair_dir(self.model_name, self.options.op)

    @property
    def eager_profile(self) -> Path:
        return self.run_dir / "profiles" / "eager"

    @property
    def compile_profile(self) -> Path:
        return self.run_dir / "profiles" / "compile"

    def groups_to_check(self) -> tuple[str, ...]:
        """The group(s) phases 4-5 examine: the reused ones, or the generated one."""
        return self.scaffold.carriers if self.scaffold is not None else ()

    def record(self, phase: str, verdict: str, summary: str, device: str = "n/a", evidence=()) -> None:
        self.ws.record(self.model_name, self.options.op, phase, verdict, summary[:500], device=device,
                       evidence=list(evidence))


def load_scaffold_facts(ctx: RunContext) -> ScaffoldFacts | None:
    """Phase 2's record, or None when the run cannot keep it (missing, cut short, or written by another sdcompile):
    the run then scaffolds again rather than stopping, as it does for any phase it cannot keep."""
    return pair_facts(ctx.ws, ctx.model_name, ctx.options.op)
