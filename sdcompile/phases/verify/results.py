"""What `sdcompile verify` returns: its typed results, read by its renderer (render.py) and by `sdcompile run`."""

from __future__ import annotations

from dataclasses import dataclass

from sdcompile.core.environment import TargetEnvironment
from sdcompile.core.target.kernel_sites import SiteKernel
from sdcompile.phases.debug.results import MismatchVerdict
from sdcompile.testing.backend import GraphCheck
from sdcompile.testing.numerics import InputSpec, Numerics, Timing


@dataclass(frozen=True)
class Divergence:
    """Why a pattern did not replace its own search function: the pattern as register_replacement registered it,
    aligned from its output with the graph the pass received (the alignment `sdcompile debug` makes)."""

    # "structure" (the first match) or "exact" (register_replacement's re-trace with the matched values) when a
    # node pair differs; "matches" when nothing differs and torch's matcher accepts; "unexplained" when nothing
    # differs by sdcompile's reading and torch's matcher still rejects (its message says why); "error"
    stage: str
    graph_node: str | None  # "gelu: bf16[2, 2, 2] = aten.gelu.default(arg0_1, approximate='tanh')"
    pattern_node: str | None  # the search-graph node facing it: "convert_element_type_1: bf16[2, 2, 2] = ..."
    reason: str  # one sentence
    torch_message: str | None  # torch's own matcher at the node the pattern's output was aligned with
    start: str | None = None  # that node
    matched: int = 0  # pattern ops lined up
    total: int = 0  # pattern ops
    mismatch: MismatchVerdict | None = None  # the catalog's type (1-7), cause and fix, with evidence


@dataclass(frozen=True)
class NumericsDifference:
    """Why a pattern that replaced its own search function fails numerics: where its replacement differs from it."""

    pattern_file: str | None  # where the replacement is, relative to the tree
    role: str | None  # the input the replacement binds raw, though the search function transforms it first
    steps: tuple[str, ...]  # ...how it transforms it: ("aten.add.Tensor(weight, 1)",)
    bound_cosine: float | None  # the cosine with the transformed value bound instead
    ignored: tuple[tuple[str, str], ...]  # (input, side that does not read it), when no transform explains it
    error: str | None = None  # evaluating the two failed (the verdict stands)


@dataclass(frozen=True)
class DataMoved:
    """What one call of a pattern's search function (the chain) and of its replacement move (testing.data_movement),
    and the bytes the replacement's copies, casts and fills write beyond the chain's."""

    chain_bytes: int
    replacement_bytes: int
    materialised_bytes: int

    @property
    def moves_more(self) -> bool:
        """The replacement moves more data than the chain: a hit likely to lose (R2, R5)."""
        return self.replacement_bytes > self.chain_bytes


@dataclass(frozen=True)
class UnitCase:
    pattern: str  # PatternBase.name()
    inputs: tuple[InputSpec, ...]
    replacements: int  # inductor's pattern_matcher_count: every pattern of the group
    pass_log_counts: tuple[int, ...]  # from "PatternMatchPass replace N patterns." (one per compiled graph)
    own_hits: int  # replacements applied by this pattern itself (an earlier-registered sibling may match first)
    hits_by_pattern: dict[str, int]
    graph: GraphCheck | None
    numerics: Numerics | None
    divergence: Divergence | None  # why it did not replace (None when it did, or when it raised)
    timing: Timing | None
    error: str | None
    passed: bool
    evidence: tuple[str, ...] = ()
    difference: NumericsDifference | None = None  # when it replaced its search function and numerics fail
    kernels: tuple[SiteKernel, ...] = ()  # the replacement's fused calls, judged on the NPU's kernel
    moved: DataMoved | None = None  # the data one call moves, chain vs replacement (a static estimate)


@dataclass(frozen=True)
class ModelSite:
    pattern: str  # which pattern of the group replaced it
    node: str  # the matched node (the pattern's output in the model graph, before the pass)
    target: str  # that node's op
    module_path: str  # the submodule it ran in ("blocks.0.attn1.norm_q"), when the graph kept it
    source: str  # the innermost model (non-torch) source line: "file:line in fn: code", when the graph kept it


@dataclass(frozen=True)
class ModelLevel:
    model: str
    dtype: str
    graphs: int  # compiled graphs (more than one means graph breaks)
    replacements: int
    pass_log_counts: tuple[int, ...]
    hits_by_pattern: dict[str, int]
    sites: tuple[ModelSite, ...]
    # Fused ops the model graph already had before the pass: what diffusers called itself on an NPU host
    # (its RMSNorm calls torch_npu.npu_rms_norm there), which no pattern then needs to, or can, replace.
    fused_ops_before_pass: dict[str, int]
    numerics: Numerics | None
    timing: Timing | None
    error: str | None
    error_source: str | None  # "group" (its pattern raised) or "model" (fails with no group enabled too)
    mismatch_type: int | None  # 7 when the unit level hits and the model does not
    advice: str | None
    passed: bool
    evidence: tuple[str, ...] = ()
    # From the pair's phase-1 analysis.json, when there is one: the sites `analyze` found for the op, and those
    # of them no replacement landed in.
    analyzed_sites: tuple[str, ...] = ()
    unreplaced_sites: tuple[str, ...] = ()
    # Every fused-op call of the compiled model, judged on the NPU's kernel (core/target/kernel_sites.py)
    kernels: tuple[SiteKernel, ...] = ()



@dataclass(frozen=True)
class GraphPassTest:
    """Phase 4 of a custom graph pass (written only on request: upstream forbids them): the two-layer test scaffold
    generated for it (frozen unit sites; the model frozen, with parameters lifted), run by pytest as a user runs it."""

    pass_class: str
    pass_file: str  # relative to the target root
    test_file: str  # relative to the target root
    command: str  # the pytest command, runnable from anywhere
    passed: bool
    last_line: str  # pytest's summary line
    log: str  # the whole output, in the report folder


@dataclass(frozen=True)
class GroupResult:
    group: str
    flag: str | None
    position: int | None  # in pattern_registry (None: exported but not registered; 0: a GraphPatternEntry carrier)
    module: str | None
    load_error: str | None
    unit: tuple[UnitCase, ...]
    model: ModelLevel | None
    unit_passed: bool  # every pattern of the group replaces its own search function with good numerics
    passed: bool  # the gate for this group (unit, plus model level when it was run for a single group)
    summary: str


@dataclass(frozen=True)
class PatternModuleStatus:
    module: str
    ok: bool
    error: str | None


@dataclass(frozen=True)
class VerifyReport(TargetEnvironment):
    min_cosine: float
    upstream_min_cosine: float
    pattern_modules: tuple[PatternModuleStatus, ...]
    groups: tuple[GroupResult, ...]
    model: str | None
    dtype: str | None
    pair: tuple[str, str] | None  # (model, op) whose lifecycle state was recorded
    passed: bool
    timing_note: str
    notes: tuple[str, ...] = ()
    report_dir: str | None = None
    graph_pass: GraphPassTest | None = None  # a custom graph pass's test, in place of groups
    skipped: str | None = None  # scaffold's decision when it left nothing to verify ("already fused")


# ------------------------------------------------------------------------------------------------ helpers
