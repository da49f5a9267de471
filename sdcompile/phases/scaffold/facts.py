"""What scaffold decided, as the later phases act on it (register, verify, debug, the lifecycle): typed facts of its
result, in memory or read back from the pair's scaffold.json."""

from __future__ import annotations

from dataclasses import dataclass

from sdcompile.phases.choices import Carrier, Decision
from sdcompile.phases.scaffold.results import Need, ScaffoldResult
from sdcompile.util.serialize import from_jsonable
from sdcompile.workspace.artifacts import ArtifactError, read_artifact


@dataclass
class ScaffoldFacts:
    """What scaffold decided, as the later phases act on it: its result in this process, or read back from the
    pair's scaffold.json (a resumed run, or a later phase's own command)."""

    decision: str  # reuse | already fused | generate | nothing located | cannot generate
    covering: tuple[str, ...]  # groups that replace the sites (reuse)
    flag: str
    group: str
    module: str
    kinds: tuple[str, ...]  # generated file kinds (files.PlannedFile.kind: "pattern", "graph entries test", ...)
    files: tuple[str, ...]  # generated files, relative to the target root
    graph_pass_class: str | None  # the generated custom pass class, when --path graph-pass asked for one
    rows_need_graph_pass: bool  # some refused site can be replaced by a GraphPatternEntry (graph_pass_can_match)
    # every site computes other math than the target's fused op (all exact GELUs): nothing to write, by hand either
    other_math_only: bool = False

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
            other_math_only=other_math_only(result.sites),
        )

    @property
    def fused_by_model(self) -> bool:
        """The model calls the op's fused kernel itself at every site (diffusers' NPU branch): nothing to replace."""
        return self.decision == Decision.ALREADY_FUSED

    @property
    def generated_pattern(self) -> bool:
        return self.decision == Decision.GENERATE and "pattern" in self.kinds

    @property
    def generated_entries(self) -> bool:
        """A GraphPatternEntry carrier: registered by its flag, like a group."""
        return self.decision == Decision.GENERATE and "graph entries" in self.kinds

    @property
    def registers(self) -> bool:
        return self.generated_pattern or self.generated_entries

    @property
    def generated_graph_pass(self) -> bool:
        return self.decision == Decision.GENERATE and "graph pass" in self.kinds

    def file_of(self, kind: str) -> str | None:
        return next((f for f, k in zip(self.files, self.kinds, strict=True) if k == kind), None)

    @property
    def carriers(self) -> tuple[str, ...]:
        """What phases 4-5 examine: the reused groups, the generated group, the entries carrier (by its flag) or
        the custom graph pass (by its class: verify runs its generated test)."""
        if self.decision == Decision.REUSE:
            return self.covering
        if self.generated_pattern:
            return (self.group,)
        if self.generated_entries:
            return (self.flag,)
        if self.generated_graph_pass and self.graph_pass_class:
            return (self.graph_pass_class,)
        return ()


def pair_facts(ws, model: str, op: str) -> ScaffoldFacts | None:
    """The pair's scaffold record as facts, or None when there is none this sdcompile can read (missing, cut short,
    or another schema)."""
    path = ws.pair_dir(model, op, create=False) / "scaffold" / "scaffold.json"
    try:
        return ScaffoldFacts.of(from_jsonable(ScaffoldResult, read_artifact("scaffold", path)))
    except (OSError, ValueError, KeyError, TypeError, ArtifactError):
        return None


def other_math_only(rows) -> bool:
    """Every counted site computes other math than the fused op (Need.OTHER_MATH): no pattern, generated or written
    by hand, has a kernel to call for them."""
    counted = [row for row in rows if row.need != Need.NOT_A_SITE]
    return bool(counted) and all(row.need == Need.OTHER_MATH for row in counted)
