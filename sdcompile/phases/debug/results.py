"""What `sdcompile debug` reports: frozen dataclasses, one JSON document with --json."""

from __future__ import annotations

from dataclasses import dataclass

from sdcompile.core.environment import TargetEnvironment
from sdcompile.core.graph.graph_breaks import GraphBreak
from sdcompile.core.target.kernel_sites import SiteKernel


# ------------------------------------------------------------------------------------------------ results
@dataclass(frozen=True)
class NodeView:
    name: str
    op: str  # "aten.mul.Tensor", "placeholder", "get_attr _frozen_param3", "literal"
    text: str  # "mul_1: bf16[2, 8, 64] = aten.mul.Tensor(mul, arg0_1)"
    source: str  # "diffusers/models/normalization.py:556 in forward: hidden_states = ..." ("" when not kept)
    holds: str | None = None  # placeholder / get_attr of the model: what it holds ("parameter norm.weight")


@dataclass(frozen=True)
class PairView:
    status: str  # "match" | "input" | "differs" | "extra in model" | "missing in model"
    field: str | None  # target | argument | constant | dtype | shape | users | node kind
    pattern: NodeView | None
    model: NodeView | None
    detail: str


@dataclass(frozen=True)
class FirstMismatch:
    stage: str  # "structure" (first match) or "exact" (register_replacement's re-trace with real values)
    field: str
    kind: str
    detail: str
    pattern: NodeView | None
    model: NodeView | None


@dataclass(frozen=True)
class MismatchVerdict:
    type: int
    name: str
    cause: str
    path: str  # "A" (edit the pattern) or "B" (another carrier: a weight as a pattern input, a GraphPatternEntry)
    fix: str
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class PatternAtSite:
    pattern: str
    verdict: str  # "replaced" | "accepted" (torch accepts, the pass applied another) | "mismatch" | "error"
    start: str | None  # the model node the pattern's output was aligned with
    matched: int  # pattern ops lined up before/around the differences
    total: int
    torch_says: str  # torch's own matcher at `start`
    first: FirstMismatch | None
    other_differences: tuple[str, ...]
    mismatch: MismatchVerdict | None
    pairs: tuple[PairView, ...]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class GroupAtSite:
    group: str
    verdict: str  # "matches" | "mismatch" | "already fused"
    replaced_by: dict[str, int]  # pattern -> replacements the pass made inside this site
    mismatch_type: int | None
    summary: str
    closest: str | None  # the pattern whose alignment is shown (the one that lines up most)
    patterns: tuple[PatternAtSite, ...]


@dataclass(frozen=True)
class SiteResult:
    id: str  # "S1"
    subject: str  # the model, or "unit <pattern>" for a group's own search function
    label: str
    graph: int
    found_by: tuple[str, ...]
    nodes: int
    source: str
    fused_ops: tuple[str, ...]
    verdict: str  # "matches" | "mismatch" | "already fused"
    groups: tuple[GroupAtSite, ...]


@dataclass(frozen=True)
class PatternInfo:
    name: str
    source_file: str
    traced_with: str  # the trace function and decomposition table register_replacement used
    decompositions: int
    same_as_registered: bool | None  # the re-trace's PatternExpr equals the registered one
    anchor: tuple[str, ...]  # the op(s) the matcher starts from (the pattern's output)
    printed: str  # PatternPrettyPrinter of the registered pattern
    graph: str  # the search graph, with the pattern's source lines
    error: str | None = None


@dataclass(frozen=True)
class GroupInfo:
    group: str
    flag: str | None
    position: int | None
    source: str  # "mindiesd/compilation/patterns/wan_rmsnorm_pattern.py" or the --pattern-file
    error: str | None
    patterns: tuple[PatternInfo, ...]
    unit_hits: int  # replacements of the group's own search functions at the stage
    unit_by_pattern: dict[str, int]
    model_hits: int | None  # replacements in the model at the stage (None: no model)
    model_by_pattern: dict[str, int]
    # at after_freezing: the replacements the backend's own pass makes in the model before freezing, for contrast
    model_hits_before_freezing: int | None
    outside_sites: tuple[str, ...]  # replacements that landed outside every candidate site
    silent_miss: bool  # the unit test hits, the model has none (mismatch type 7)
    # the fused calls the group's pass put in the model's graphs, judged on the NPU's kernel (kernel_sites.py)
    kernels: tuple[SiteKernel, ...] = ()


@dataclass(frozen=True)
class GraphBreaks:
    """Where dynamo split the model's forward, read off the capture debug compares against."""

    graphs: int
    places: tuple[GraphBreak, ...]  # each place once, with how many graphs ended there
    untraced: tuple[str, ...] = ()  # why dynamo gave up on code no break names (it compiled what that code calls)

    @property
    def breaks(self) -> int:
        return sum(p.count for p in self.places)


@dataclass(frozen=True)
class RegistryRun:
    """The model with every group the backend enables by default, in registration order (--registry-order)."""

    groups: tuple[str, ...]  # in the order they were registered
    replacements: dict[str, int]  # group -> replacements in the model
    conflicts: int  # (site, group) pairs where a group that matches alone loses the site to an earlier group
    note: str


@dataclass(frozen=True)
class DebugResult(TargetEnvironment):
    model: str  # the model, or "unit" (each group against its own search functions)
    label: str
    dtype: str
    op: str
    stage: str  # "before_freezing" | "after_freezing"
    stage_note: str
    prepare_freezing: bool
    graph_breaks: GraphBreaks | None
    groups: tuple[GroupInfo, ...]
    registry_run: RegistryRun | None
    sites: tuple[SiteResult, ...]
    mismatched_sites: int
    passed: bool  # every site matches (or already calls the fused op)
    summary: str  # the verdict line's text: which sites match, or how many do not and of which mismatch types
    notes: tuple[str, ...]
    report_dir: str
    dumps: tuple[str, ...]
    seconds: float
