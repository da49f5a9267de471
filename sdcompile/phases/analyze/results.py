"""What `sdcompile analyze` returns: per primitive its implementations, their sites, where their tensors come
from, the path decision, the NPU note, and a summary of the graphs captured."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from sdcompile.core.environment import Versions
from sdcompile.core.graph.graph_breaks import GraphBreak
from sdcompile.phases.choices import Carrier
from sdcompile.util.reasons import Reason

PATTERN_STAGE = "graph_rewrite_before_freezing"  # where MindIE-SD's pattern pass runs
AFTER_FREEZING_STAGE = "graph_rewrite_after_freezing"


@dataclass(frozen=True)
class SiteReport:
    path: str  # "transformer_blocks.0.attn.norm_q"; "" is the model itself
    module_class: str
    calls: int
    aten_nodes: int  # nodes of its subgraph in the before_freezing graph
    shared_graph: bool  # those nodes sit in a graph compiled from the code itself (graph break), shared by sites
    note: Reason | None  # why a site has no ATen nodes (or is no site), when it has none
    npu_branch_taken: bool | None  # diffusers' own torch_npu branch ran here (None: no such branch)


class Holder(StrEnum):
    """What holds a module tensor in a captured stage; the path decision is taken on this, not on the text."""

    PLACEHOLDER = "placeholder"  # a graph input: a pattern input binds it
    GET_ATTR = "get_attr"  # a constant of the graph
    FOLDED = "folded"  # freeze() folded what it feeds into a new constant
    ABSENT = "absent"  # the capture worked and the tensor is in no graph (only values computed from it are)
    NOT_CAPTURED = "not captured"  # no graph: torch.compile failed, nothing can be checked
    NOT_FROZEN = "not frozen"  # the capture stopped before freeze() (analyze without --after-freezing)


class Why(StrEnum):
    """The codes of analyze's reasons (util.reasons.Reason); render.py words each from its facts, named here."""

    # a site's note
    UNMODULATED = "unmodulated"
    NOT_CAPTURED = "not-captured"  # backend: what torch.compile said
    DEAD_CODE = "dead-code"
    OUTSIDE_COMPILED = "outside-compiled"
    # a primitive's note
    ABSENT = "absent"  # title, modulation: the catalog has modulation forms for it
    # the path decision
    FUNCTION_INPUT = "function-input"
    LIFTED = "lifted"  # tensor, before, after (Held as JSON), torch
    CAPTURE_FAILED = "capture-failed"  # backend
    CONSTANT = "constant"  # tensor, before
    UNBOUND = "unbound"  # tensor, before
    # the capture
    NOT_COMPILED = "not-compiled"
    NO_GRAPHS = "no-graphs"  # backend
    CAPTURED = "captured"  # prepare_freezing, before: [placeholders, get_attr], after: the same or None, folded, torch


@dataclass(frozen=True)
class Held:
    """What holds a module tensor in one captured stage: decisions read `holder`, the renderer words the rest."""

    holder: Holder = Holder.ABSENT
    node: str = ""  # "arg28_1", "_frozen_param3"
    target: str = ""  # a get_attr node's target


@dataclass(frozen=True)
class TensorSource:
    tensor: str  # "transformer_blocks.0.attn.norm_q.weight"
    kind: str  # "parameter" | "buffer" | "tensor attribute"
    read_by: str  # "RMSNorm.forward line 427" — who reads it; "child module <path>" for tensors of children
    before: Held  # in the graph the pattern pass sees (before freezing)
    after: Held  # after freeze() (NOT_FROZEN: the capture stopped before it)


@dataclass(frozen=True)
class PathDecision:
    parameter_source: str  # "module attribute" | "function input"
    path: Carrier  # replacement | graph-entry (never a custom graph pass: upstream forbids them)
    stage: str  # "graph_rewrite_before_freezing" | "graph_rewrite_after_freezing"
    why: Reason


@dataclass(frozen=True)
class NpuNote:
    fused_ops: tuple[str, ...]  # torch_npu ops the implementation calls itself ("npu_rms_norm")
    gate: str  # "is_torch_npu_available"
    condition: str  # the source line deciding the branch
    taken_at: int  # sites where the branch ran in this run
    of_sites: int
    not_taken: tuple[str, ...]  # sites where it did not (the rest of its condition is false there)
    gate_meaning: str  # what the gate checks (catalogs/npu_branches.toml)
    model_sees_npu: bool  # the model was traced with torch_npu importable (real or emulated)
    device: str  # the device label of the run


@dataclass(frozen=True)
class ImplementationReport:
    name: str  # "torch.nn.RMSNorm", "embeddings.apply_rotary_emb", "transformer_flux.FluxTransformerBlock.forward
    #            (inline)"
    qualified_name: str
    kind: str  # "class" | "function" | "inline"
    scope: str  # "torch" | "diffusers (shared)" | "model-local" | "user code"
    matched_by: tuple[str, ...]
    form: str | None
    order: str | None  # AdaLN: "shift, scale" / "scale, shift" as its split hands them out
    source: str  # "diffusers/models/normalization.py:510-568"
    lines_run: str  # "541-543, 554-566"
    primitive_lines: str  # inline implementations: the lines computing the primitive ("476, 490")
    site_count: int
    sites: tuple[SiteReport, ...]
    tensors: tuple[TensorSource, ...]
    child_tensors: tuple[str, ...]  # module attributes read only by child modules (e.g. an AdaLN's linear)
    decision: PathDecision
    evidence: tuple[str, ...]
    npu_note: NpuNote | None
    snippet: str | None  # workspace-relative path of the source snippet
    subgraphs: str | None  # workspace-relative path of the ATen subgraphs file
    producer_only: bool = False  # AdaLN: computes only shift/scale/gate, its callers modulate: not a site itself

    @property
    def counted_sites(self) -> int:
        """Its sites as the op's count takes them: none for a producer (its callers' modulations are the sites)."""
        return 0 if self.producer_only else self.site_count


@dataclass(frozen=True)
class Unexercised:
    """A call of the primitive in the model's source that this forward did not run (a branch not taken, RoPE tables
    not passed, a config flag off): where it is and, when its source shows it, what would reach it."""

    op: str
    file: str  # short path of the call: "diffusers/models/attention_processor.py"
    line: int
    lines: tuple[int, ...]  # every call of the primitive in that function left out by the same condition
    code: str  # the source line, stripped: "query = apply_rotary_emb_allegro(query, ...)"
    function: str  # "AllegroAttnProcessor2_0.__call__"
    matched_by: str  # the catalog rule that names it ("function apply_rotary_emb*")
    not_run: str  # the outermost function on the way to it that never ran ("" when its own function ran)
    guard: str  # the condition's source ("" when none was found)
    guard_kind: str  # guards.GuardKind: "if", "ternary", "and", "or", "while", "for", "except", "early exit"
    guard_holds: bool  # the call runs when the condition is true (False: when it is false)
    guard_ran: bool  # the condition's own line ran: it is what kept the call from running
    guard_file: str  # short path of the condition (the caller's file when not_run)
    guard_line: int
    guard_function: str  # the function the condition is in ("" when none was found)
    argument: str | None  # the model's forward argument the condition reads (by name)
    parameter: str | None  # else a parameter of the condition's function it reads that the model's forward lacks
    argument_given: bool  # these inputs pass it
    argument_value: str | None  # its value here, or its default when not given ("None", "False", "tensor[1, 8]")
    setting: str | None  # "config.use_rope", "self.norm_type", "attn.norm_q": a setting the condition reads
    setting_value: str | None  # its one value on the instances that run this code


@dataclass(frozen=True)
class OpReport:
    op: str
    title: str
    requested: bool  # named explicitly (not only through --op all)
    present: bool
    implementations: tuple[ImplementationReport, ...]
    site_count: int
    analysis: str | None  # workspace-relative analysis.json
    note: Reason | None  # why it is absent
    unexercised: tuple[Unexercised, ...] = ()  # calls of it in the source this forward did not run


@dataclass(frozen=True)
class CaptureSummary:
    graphs: int
    stages: tuple[str, ...]
    prepare_freezing: bool
    parameters_before_freezing: tuple[int, int]  # (placeholders, get_attr) of the model's parameters
    parameters_after_freezing: tuple[int, int] | None  # None: freeze() was not run (analyze --after-freezing runs it)
    note: Reason
    folder: str  # workspace-relative folder of the dumps
    redundant_node_elimination: str = ""  # whose pass made the before-freezing graph ("" when nothing compiled)
    breaks: tuple[GraphBreak, ...] = ()  # where dynamo split the forward (each place once, with its graph count)
    untraced: tuple[str, ...] = ()  # why dynamo gave up on code no break names (it compiled what that code calls)


@dataclass(frozen=True)
class AnalyzeResult:
    model: str
    label: str
    model_class: str
    origin: str
    dtype: str
    device: str
    device_reason: str
    torch_version: str
    diffusers_version: str | None
    op: str
    ops: tuple[OpReport, ...]
    gate: str  # "pass" | "fail"
    missing: tuple[str, ...]  # explicitly requested ops that are absent
    capture: CaptureSummary
    workspace: str
    seconds: float
    timings: dict[str, float]
    versions: Versions  # torch, torch_npu (real or emulated), diffusers; analyze reads no MindIE-SD tree
    model_notes: tuple[str, ...] = ()  # how the model was made when sdcompile made it (size, synthesized inputs)
    build: dict[str, str | int | None] | None = None  # ModelBuild.fingerprint(): the size and option files it used
