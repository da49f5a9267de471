"""What the steps of `sdcompile run` share: a step's outcome, what scaffold decided, and the run's context."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sdcompile.lifecycle.commands import Commands
from sdcompile.lifecycle.options import RunOptions
from sdcompile.phases.choices import Carrier
from sdcompile.phases.scaffold.results import Need, ScaffoldResult
from sdcompile.util.serialize import from_jsonable
from sdcompile.workspace.artifacts import ArtifactError, read_artifact

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
class ScaffoldFacts:
    """What scaffold decided: its result in this run, or read back from its scaffold.json when a resumed run
    kept phase 2."""

    decision: str  # reuse | already fused | generate | nothing located | cannot generate
    covering: tuple[str, ...]  # groups that replace the sites (reuse)
    flag: str
    group: str
    module: str
    kinds: tuple[str, ...]  # generated file kinds (files.PlannedFile.kind: "pattern", "graph entries test", ...)
    files: tuple[str, ...]  # generated files, relative to the target root
    graph_pass_class: str | None  # the generated custom pass class, when --path graph-pass asked for one
    rows_need_graph_pass: bool  # some refused site can be replaced by a GraphPatternEntry (graph_pass_can_match)

    @classmethod
    def of(cls, result: ScaffoldResult) -> ScaffoldFacts:
        covering = sorted({g for row in result.sites if row.need == Need.COVERED for g in row.production.groups})
        # a dry run's files are the ones it would write
        written = [f for f in result.files if f.status in ("created", "overwritten", "unchanged", "would create",
                                                            "would overwrite")]
        names = result.names
        return cls(
            decision=result.decision,
            covering=tuple(covering),
            flag=names.flag,
            group=names.group,
            module=names.module,
            kinds=tuple(f.kind for f in written),
            files=tuple(f.path for f in written),
            graph_pass_class=(names.pass_class if any(v.path == Carrier.GRAPH_PASS for v in result.variants) else None),
            rows_need_graph_pass=any(row.graph_pass_can_match for row in result.sites),
        )

    @property
    def generated_pattern(self) -> bool:
        return self.decision == "generate" and "pattern" in self.kinds

    @property
    def generated_entries(self) -> bool:
        """A GraphPatternEntry carrier: registered by its flag, like a group."""
        return self.decision == "generate" and "graph entries" in self.kinds

    @property
    def registers(self) -> bool:
        return self.generated_pattern or self.generated_entries

    @property
    def generated_graph_pass(self) -> bool:
        return self.decision == "generate" and "graph pass" in self.kinds

    def file_of(self, kind: str) -> str | None:
        return next((f for f, k in zip(self.files, self.kinds, strict=True) if k == kind), None)


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
        facts = self.scaffold
        if facts is None:
            return ()
        if facts.decision == "reuse":
            return facts.covering
        if facts.generated_pattern:
            return (facts.group,)
        if facts.generated_entries:
            return (facts.flag,)  # the carrier is known by its flag
        if facts.generated_graph_pass and facts.graph_pass_class:
            return (facts.graph_pass_class,)  # verify runs its generated test
        return ()

    def record(self, phase: str, verdict: str, summary: str, device: str = "n/a", evidence=()) -> None:
        self.ws.record(self.model_name, self.options.op, phase, verdict, summary[:500], device=device,
                       evidence=list(evidence))


def load_scaffold_facts(ctx: RunContext) -> ScaffoldFacts | None:
    """Phase 2's record, or None when the run cannot keep it (missing, cut short, or written by another sdcompile):
    the run then scaffolds again rather than stopping, as it does for any phase it cannot keep."""
    path = ctx.pair_dir / "scaffold" / "scaffold.json"
    try:
        return ScaffoldFacts.of(from_jsonable(ScaffoldResult, read_artifact("scaffold", path)))
    except (OSError, ValueError, KeyError, TypeError, ArtifactError):
        return None
