"""What `sdcompile scaffold` returns: the path per implementation, the reuse check site by site, the variants
generated, their self-check, and the files planned or written."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from sdcompile.core.environment import TargetEnvironment
from sdcompile.core.target.naming import RegistrationNames
from sdcompile.phases.choices import Carrier
from sdcompile.util.reasons import Reason


class Need(StrEnum):
    """What a site needs, one name everywhere (the value is what --json shows); a carrier is named as
    choices.Carrier names it."""

    COVERED = "covered"  # the target's enabled groups replace it
    FUSED = "fused by the model"  # the model graph calls the fused op already
    REPLACEMENT = Carrier.REPLACEMENT.value  # a register_replacement pattern
    GRAPH_ENTRY = Carrier.GRAPH_ENTRY.value  # a GraphPatternEntry carrier
    GRAPH_PASS = Carrier.GRAPH_PASS.value  # a custom graph pass (only on request: upstream forbids it)
    CANNOT = "cannot generate"
    NOT_A_SITE = "not a site"  # an AdaLN class that only produces the modulation: shown, never counted
    NOT_IN_GRAPH = "not in the graph"  # the code ran, no node of the captured graphs is the site's
    OTHER_MATH = "other math"  # computes a variant the fused op does not (an exact GELU): left as it is

    @classmethod
    def of_path(cls, path: str) -> Need:
        """The need for a carrier (a scaffold --path, auto resolved)."""
        return cls(Carrier(path).value)


class Why(StrEnum):
    """The codes of scaffold's reasons (util.reasons.Reason); render.py words each from its facts, named here."""

    # the decision over all sites
    NOTHING_LOCATED = "nothing-located"  # title (the op's)
    ALREADY_FUSED = "already-fused"  # counts: {need: sites}
    REUSE = "reuse"  # counts
    NOTHING_GENERATABLE = "nothing-generatable"  # counts, why: the one reason they share (None: they differ)
    NONE_WRITABLE = "none-writable"  # needy: sites needing one, why: as above
    GENERATE = "generate"  # generated, forced, counts
    # what a site needs
    COVERED = "covered"  # see its production coverage
    PRODUCER_ONLY = "producer-only"
    UNMODULATED = "unmodulated"
    FUSED_BY_MODEL = "fused-by-model"  # fused_ops
    NOT_IN_GRAPH = "not-in-graph"  # the code ran, no node of the captured graphs is the site's
    OTHER_MATH = "other-math"  # op (its node's target), key, has, wants, title: the fused op's own value only
    SPLIT_BY_BREAK = "split-by-break"  # graphs
    NEEDS_GENERATION = "needs-generation"  # status, forced
    COVERED_BY_GENERATED = "covered-by-generated"  # by, own: why the site's own chain could not be written
    # why a site gets no source
    NO_RECIPE = "no-recipe"  # op
    NO_NODES_AFTER_FREEZE = "no-nodes-after-freeze"
    NO_TABLE_FORM = "no-table-form"  # title, computed_inputs: the fused op's inputs are computed from the chain's
    INNER_OP = "inner-op"  # inner, gained, entry_can
    SHARED_START = "shared-start"  # start
    CHAIN = "chain"  # message: the chain writer's own words (core.graph ChainError)
    PRODUCTION_TAKES_PART = "production-takes-part"  # groups: [(group, flag)], ops, then: what they leave, or None
    GROUPS_LEAVE = "groups-leave"  # what: output-read | reads-outside | role-replaced, node, role
    NUMERICS = "numerics"  # name, path, dtypes, figures: {cosine, max_abs, outside, elements, dtype} | None,
    #                        error, transform_role, transform, ignored
    # the path per implementation
    PATH_UNREPORTED = "path-unreported"  # chosen
    PATH_PHASE1 = "path-phase1"  # requested, agreed, phase1: analyze's decision {path, parameter_source, stage, why}
    AUTO_ENTRY = "auto-entry"  # refusal: why no pattern can serve the chain
    ONE_CARRIER = "one-carrier"
    # notes
    REGISTRATION_FINDING = "registration-finding"  # torch, lost, gained
    MATERIALISED = "materialised"  # name, fused_op, reads, like, like_shape, roles: [(role, shape | None)]
    BACKEND_ALREADY_CALLS = "backend-already-calls"  # backend, pass_class
    BESIDE_TARGET_OWN = "beside-target-own"  # group, flag, word, files
    COVERING_LEAVES = "covering-leaves"  # ops
    FUSED_BY_DIFFUSERS = "fused-by-diffusers"  # sites, op, device
    PLAIN_CPU = "plain-cpu"
    WITHHELD = "withheld"  # missed: ["bf16 blocks.0.norm", ...]


class Refused(Exception):
    """A site's chain cannot be written on the path asked for: `reason` says why. `entry_can`: a GraphPatternEntry,
    matching the graph's own nodes, can still replace it."""

    def __init__(self, reason: Reason, entry_can: bool = False):
        super().__init__(reason.code)
        self.reason, self.entry_can = reason, entry_can


REUSED = (Need.COVERED, Need.FUSED)
GENERATED = (Need.REPLACEMENT, Need.GRAPH_ENTRY, Need.GRAPH_PASS)


@dataclass(frozen=True)
class PathChoice:
    implementation: str
    parameter_source: str  # from phase 1: "module attribute" | "function input"
    phase1_path: str  # phase 1's decision (a Carrier), "unknown" when it did not report the implementation
    requested: str  # --path (choices.SCAFFOLD_PATHS)
    path: Carrier
    why: Reason


@dataclass(frozen=True)
class GroupCoverage:
    group: str
    status: str
    replaced: int
    by: tuple[str, ...]
    left: tuple[str, ...]


@dataclass(frozen=True)
class SiteCoverage:
    site: str
    implementation: str
    status: str  # "replaced" | "partly replaced" | "not replaced" | "fused by the model" | "not in the graph"
    nodes: int  # the site's nodes in the before-freezing graph
    replaced: int  # of those, how many the run's replacements took
    by: tuple[str, ...]  # "WanRmsNormPatternGroup: WanRmsNormPattern-torch.bfloat16"
    left: tuple[str, ...]  # ops of the site still in the graph after the run ("aten._to_copy.default x2")
    groups: tuple[str, ...] = ()  # the groups of `by`, in order ("WanRmsNormPatternGroup"): what decisions read
    patterns: tuple[str, ...] = ()  # the patterns of `by`, in order ("WanRmsNormPattern-torch.bfloat16")


@dataclass(frozen=True)
class SiteCheck:
    dtype: str
    site: str
    expected: str  # the pattern (or chain) generated for this site
    hit: bool  # the site's whole chain was replaced, by what was generated for it
    by: tuple[str, ...]
    left: tuple[str, ...]  # the site's ops still there afterwards
    error: str | None = None
    patterns: tuple[str, ...] = ()  # the patterns (or chains) of `by`, in order: what decisions read


@dataclass(frozen=True)
class SiteRow:
    dtype: str
    site: str
    implementation: str
    source: str
    nodes: int
    graph: int | None
    production: SiteCoverage  # every group the target enables by default, in registry order
    groups: tuple[GroupCoverage, ...]  # each group alone, where it replaced anything
    need: Need
    reason: Reason  # why `need`
    generated: str | None  # the pattern / chain generated for it
    check: SiteCheck | None  # the generated source run on this site
    graph_pass_can_match: bool = False  # refused as a pattern, but a GraphPatternEntry can replace it


@dataclass(frozen=True)
class NumericsCheck:
    """The numerics gate on one entry of a variant: its replacement against its own search function."""

    variant: str  # "FluxRmsNormPattern"
    dtype: str
    passed: bool
    cosine: float | None  # None: the replacement raised (`error`)
    max_abs: float | None
    outside: int  # elements outside the dtype's tolerance
    elements: int
    transform_role: str | None  # when it failed: the input the chain transforms before the fused op's point
    transform: tuple[str, ...]  # ...and how ("aten.add.Tensor(weight, 1)")
    ignored: tuple[tuple[str, str], ...]  # (input, side that does not read it) when no transform explains it
    error: str | None = None
    # data moved by one call on the gate's inputs (testing.data_movement), when it passed: the chain, the replacement,
    # and the bytes the replacement's copies, casts and fills write beyond the chain's
    chain_bytes: int | None = None
    replacement_bytes: int | None = None
    materialised_bytes: int | None = None

    @property
    def moves_more(self) -> bool:
        """The replacement moves more data than the chain it replaces: a hit likely to lose (R2, R5)."""
        return self.chain_bytes is not None and self.replacement_bytes is not None and \
            self.replacement_bytes > self.chain_bytes


@dataclass(frozen=True)
class VariantInput:
    role: str  # "x"
    shape: tuple[int, ...]
    dtype: str  # "torch.bfloat16"
    origin: str  # where the graph computes it ("computed by aten.mul.Tensor", "graph input ...")


@dataclass(frozen=True)
class VariantConstant:
    name: str  # "epsilon"
    graph_value: float  # as the graph holds it (9.999999974752427e-07)
    spelled: str  # as the source spells it ("1e-06")
    fp32_rounded: bool  # graph_value is float32(spelled), not the Python float


@dataclass(frozen=True)
class Variant:
    """One distinct subgraph: one pattern class (or carrier chain), one entry per dtype and constant."""

    path: Carrier
    name: str  # "FluxRmsNormPattern", "FluxRmsNormChain"
    factory: str  # "create"
    implementation: str
    source: str
    sites: tuple[str, ...]  # "bf16 transformer_blocks.0.attn.norm_q"
    entries: tuple[str, ...]  # "create(torch.bfloat16, epsilon=1e-06)"
    constants: tuple[VariantConstant, ...]
    inputs: tuple[VariantInput, ...]
    chain: tuple[str, ...]  # the search function body / chain, one op per line
    replacement: str
    trimmed: tuple[str, ...] = ()  # edge ops left outside the pattern ("aten._to_copy.default on the output")
    bound: tuple[tuple[str, str], ...] = ()  # (role, chain variable the fused op takes in its place)
    # custom graph pass: the chain as these enabled groups leave it (their op inside)
    after_groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class GeneratedFile:
    path: str  # relative to the target root
    kind: str
    status: str
    lines: int
    diff: str


@dataclass(frozen=True)
class ScaffoldResult(TargetEnvironment):
    model: str
    label: str
    op: str
    dtypes: tuple[str, ...]
    names: RegistrationNames
    phase1: str  # where the path decision came from (the workspace's analysis.json)
    paths: tuple[PathChoice, ...]
    production_groups: tuple[str, ...]
    errors: tuple[str, ...]  # groups that failed to register or match (they are skipped, not fatal)
    sites: tuple[SiteRow, ...]
    decision: str  # reuse | already fused | generate | nothing located | cannot generate
    decision_reason: Reason
    variants: tuple[Variant, ...]
    files: tuple[GeneratedFile, ...]
    backend_diff: str  # the mindie_sd_backend.py edit a custom graph pass needs (--path graph-pass; "" otherwise)
    dry_run: bool
    forced: bool
    written: bool
    gate: str  # "pass" | "fail"
    next_steps: tuple[str, ...]
    notes: tuple[Reason, ...]
    workspace: str | None = None
    withheld: Reason | None = None  # why nothing was written although sources were generated (None: not withheld)
    numerics: tuple[NumericsCheck, ...] = ()  # the numerics gate, per generated entry
    # the enabled groups that still take part of the generated sites with the generated group registered after them
    # (shadowing.py): `register` places it before the earliest of them, specific before generic
    shadowing_groups: tuple[str, ...] = ()
    phase1_ran_first: bool = False  # scaffold ran analyze first (no analysis for this dtype, device and build)
