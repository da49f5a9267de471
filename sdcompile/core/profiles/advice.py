"""copy-audit's remedies for Copy inflation (catalogs/copy_options.toml): A fix the patterns, B VAE eager and
transformer compiled, C ACLGraph; each offered only when the target's `CompilationConfig` declares the fields it
needs (MindIE-SD 3.1.0's documented fields without a tree). Decided from the Copy numbers, with every input and
threshold shown; the headline and the remedies' wording are the renderers'."""

from __future__ import annotations

from dataclasses import dataclass

from sdcompile.catalogs import load
from sdcompile.core.target.config_fields import ConfigFields

# Copy inflation (compile / eager) treated as a Copy problem: the recipe's "ViewCopy doubling", a heuristic; also the
# default of `run`'s copy-audit gate.
DEFAULT_INFLATION = 2.0
# Compiled copy share of kernel time treated as a Copy problem (a heuristic).
DEFAULT_SHARE = 0.15
CONFIG_CLASS = "CompilationConfig"
CONFIG_IMPORT = "from mindiesd.compilation import CompilationConfig"


@dataclass(frozen=True)
class Thresholds:
    inflation: float  # compile/eager copy time at or above which copies "inflated" (the recipe: ViewCopy doubling)
    share: float  # compiled copy share of NPU kernel time at or above which copies dominate (heuristic)
    # which ratio `inflation` applies to: "time" (an NPU profile) or "count" (CPU captures, whose durations are
    # CPU times that swing with the machine's load while the copy counts are fixed by the compile)
    metric: str = "time"


@dataclass(frozen=True)
class AdviceInputs:
    attention: str  # "2d", "3d" or "unknown" (shown beside the advice; the remedies' order does not depend on it)
    attention_from: str  # "--attn", "--model <name>", or "not given"
    pattern_hits: int | None
    pattern_hits_from: str
    copy_share: float  # compiled copy time / compiled non-communication kernel time
    eager_copy_share: float
    time_inflation: float
    count_inflation: float
    time_undefined: bool = False  # 0 -> 0: no copies on either side, so no ratio (shown n/a)
    count_undefined: bool = False
    # both profiles come from an NPU: otherwise the share is CPU time, which swings with the machine's load, and is
    # shown but not weighed (the share by launches is no stand-in: 15% is a heuristic for kernel time)
    npu_times: bool = True


@dataclass(frozen=True)
class Setting:
    """A CompilationConfig field a remedy sets, as one pasteable line (`line`)."""

    field: str
    value: str
    effect: str
    line: str  # "CompilationConfig.aclgraph_with_compile = True"


@dataclass(frozen=True)
class Option:
    id: str
    title: str
    when: str
    mechanism: str
    caveat: str
    requires: tuple[str, ...]  # CompilationConfig fields the remedy needs
    settings: tuple[Setting, ...]  # the fields it sets that the config declares
    command: str  # the sdcompile command that helps ("debug"), or ""
    offered: bool  # the config declares every field in `requires`
    missing: tuple[str, ...]  # required fields the config lacks


@dataclass(frozen=True)
class Recommendation:
    choice: str  # the first offered remedy's id, or "keep" when there is no Copy problem
    offered: tuple[str, ...]  # the remedies to try, in order (empty for "keep")
    reasons: tuple[str, ...]
    inputs: AdviceInputs
    thresholds: Thresholds
    options: tuple[Option, ...]  # every remedy, offered or not (with what it misses)
    config: ConfigFields  # where the CompilationConfig fields came from
    patterns_missed: bool  # pattern hits are known and zero: A starts at the first mismatch
    heuristic_note: str


def documented_fields() -> ConfigFields:
    """MindIE-SD 3.1.0's CompilationConfig fields, as the catalog records them: the fallback without a tree."""
    doc = load("copy_options")["documented"]
    return ConfigFields(tuple(doc["fields"]), f"{doc['release']}'s {doc['source']} (as documented)", False)


def remedies(config: ConfigFields) -> tuple[Option, ...]:
    """The catalog's remedies in order, each marked offered or not by the fields `config` declares."""
    have = set(config.fields)
    out = []
    for o in load("copy_options")["option"]:
        missing = tuple(f for f in o["requires"] if f not in have)
        settings = tuple(Setting(s["field"], s["value"], s["effect"], f"{CONFIG_CLASS}.{s['field']} = {s['value']}")
                         for s in o.get("setting", ()) if s["field"] in have)
        out.append(Option(o["id"], o["title"], o["when"], o["mechanism"], o.get("caveat", ""), tuple(o["requires"]),
                          settings, o.get("command", ""), not missing, missing))
    return tuple(out)


def recommend(inputs: AdviceInputs, thresholds: Thresholds, config: ConfigFields | None = None) -> Recommendation:
    config = config if config is not None and config.from_tree else _with_problem(config)
    options = remedies(config)
    ratio, other, other_ratio = ((inputs.time_inflation, "count", inputs.count_inflation) if thresholds.metric == "time"
                                 else (inputs.count_inflation, "time", inputs.time_inflation))
    undefined, other_undefined = ((inputs.time_undefined, inputs.count_undefined) if thresholds.metric == "time"
                                  else (inputs.count_undefined, inputs.time_undefined))
    inflated = ratio >= thresholds.inflation
    heavy = inputs.npu_times and inputs.copy_share >= thresholds.share
    share_verdict = (f"{'>=' if heavy else '<'} threshold {thresholds.share:.0%}" if inputs.npu_times
                     else "not weighed: CPU time, which swings with the machine's load")
    reasons = (
        f"copy {thresholds.metric} inflation {_fmt(ratio, undefined)} (compile/eager) "
        f"{'>=' if inflated else '<'} threshold {thresholds.inflation:g} "
        f"({other}: {_fmt(other_ratio, other_undefined)})",
        f"compiled copy share {inputs.copy_share:.1%} of non-communication kernel time {share_verdict} "
        f"(eager: {inputs.eager_copy_share:.1%})",
        f"attention: {inputs.attention} ({inputs.attention_from})",
        "pattern hits: " + (f"{inputs.pattern_hits} ({inputs.pattern_hits_from})" if inputs.pattern_hits is not None
                            else f"unknown ({inputs.pattern_hits_from})"),
    )
    offered = tuple(o.id for o in options if o.offered) if (inflated or heavy) else ()
    choice = offered[0] if offered else "keep"
    note = ("thresholds are heuristics (the recipe's 'ViewCopy doubling' and a copy share of about 15%): set them with "
            "--inflation-threshold and --share-threshold")
    return Recommendation(choice, offered, reasons, inputs, thresholds, options, config,
                          inputs.pattern_hits == 0, note)


def _with_problem(config: ConfigFields | None) -> ConfigFields:
    """The documented fields, carrying why a known tree's own were not read."""
    documented = documented_fields()
    if config is None or not config.problem:
        return documented
    return ConfigFields(documented.fields, documented.source, False, config.problem)


def _fmt(ratio: float, undefined: bool = False) -> str:
    if undefined:
        return "n/a (no copies in either)"
    return "inf (no copies in eager)" if ratio == float("inf") else f"{ratio:.2f}x"
