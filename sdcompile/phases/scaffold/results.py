"""What `sdcompile scaffold` returns: the path per implementation, the reuse check site by site, the variants
generated, their self-check, and the files planned or written."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from sdcompile.core.environment import TargetEnvironment
from sdcompile.core.target.naming import RegistrationNames


class Need(StrEnum):
    """What a site needs, one name everywhere (the value is what --json and the tables show)."""

    COVERED = "covered"  # the target's enabled groups replace it
    FUSED = "fused by the model"  # the model graph calls the fused op already
    PATTERN = "pattern"  # a register_replacement pattern (--path replacement)
    GRAPH_ENTRY = "graph entry"  # a GraphPatternEntry carrier (--path graph-entry)
    GRAPH_PASS = "graph pass"  # a custom graph pass (--path graph-pass, forbidden upstream)
    CANNOT = "cannot generate"
    NOT_A_SITE = "not a site"  # an AdaLN class that only produces the modulation: shown, never counted

    @classmethod
    def of_path(cls, path: str) -> Need:
        """The carrier a scaffold --path writes (choices.SCAFFOLD_PATHS, auto resolved)."""
        return {"replacement": cls.PATTERN, "graph-entry": cls.GRAPH_ENTRY, "graph-pass": cls.GRAPH_PASS}[path]


REUSED = (Need.COVERED, Need.FUSED)
GENERATED = (Need.PATTERN, Need.GRAPH_ENTRY, Need.GRAPH_PASS)


@dataclass(frozen=True)
class PathChoice:
    implementation: str
    parameter_source: str  # from phase 1: "module attribute" | "function input"
    phase1_path: str  # phase 1's decision: "register_replacement" | "GraphPatternEntry"
    requested: str  # --path
    path: str  # "replacement" | "graph-entry" | "graph-pass" (choices.SCAFFOLD_PATHS)
    why: str


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
    reason: str  # why `need`
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


@dataclass(frozen=True)
class Variant:
    """One distinct subgraph: one pattern class (or carrier chain), one entry per dtype and constant."""

    path: str  # "replacement" | "graph-entry" | "graph-pass" (choices.SCAFFOLD_PATHS)
    name: str  # "FluxRmsNormPattern", "FluxRmsNormChain"
    factory: str  # "create"
    implementation: str
    source: str
    sites: tuple[str, ...]  # "bf16 transformer_blocks.0.attn.norm_q"
    entries: tuple[str, ...]  # "create(torch.bfloat16, epsilon=1e-06)"
    constants: tuple[str, ...]  # "epsilon: graph 9.999999974752427e-07 = float32(1e-06)"
    inputs: tuple[str, ...]  # "x [1, 24, 2, 16] torch.bfloat16 <- computed ..."
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
    phase1: str  # where the path decision came from
    paths: tuple[PathChoice, ...]
    production_groups: tuple[str, ...]
    errors: tuple[str, ...]  # groups that failed to register or match (they are skipped, not fatal)
    sites: tuple[SiteRow, ...]
    decision: str  # reuse | already fused | generate | nothing located | cannot generate
    decision_reason: str
    variants: tuple[Variant, ...]
    files: tuple[GeneratedFile, ...]
    backend_diff: str  # the mindie_sd_backend.py edit a custom graph pass needs (--path graph-pass; "" otherwise)
    dry_run: bool
    forced: bool
    written: bool
    gate: str  # "pass" | "fail"
    next_steps: tuple[str, ...]
    notes: tuple[str, ...]
    workspace: str | None = None
    withheld: str | None = None  # why nothing was written although sources were generated (None: not withheld)
    numerics: tuple[NumericsCheck, ...] = ()  # the numerics gate, per generated entry
    # the enabled groups that still take part of the generated sites with the generated group registered after them
    # (shadowing.py): `register` places it before the earliest of them, specific before generic
    shadowing_groups: tuple[str, ...] = ()
