"""copy-audit's backend recommendation: the recipe's options A-D (catalogs/copy_options.toml), decided from the
attention dimensionality, the pattern hits and the Copy numbers, with every input and threshold shown."""

from __future__ import annotations

from dataclasses import dataclass

from sdcompile.catalogs import load

# Copy inflation (compile / eager) treated as a Copy problem: the recipe's "ViewCopy doubling", a heuristic; also the
# default of `run`'s copy-audit gate.
DEFAULT_INFLATION = 2.0
# Compiled copy share of kernel time treated as a Copy problem (a heuristic).
DEFAULT_SHARE = 0.15


@dataclass(frozen=True)
class Thresholds:
    inflation: float  # compile/eager copy time at or above which copies "inflated" (the recipe: ViewCopy doubling)
    share: float  # compiled copy share of NPU kernel time at or above which copies dominate (heuristic)
    # which ratio `inflation` applies to: "time" (an NPU profile) or "count" (CPU captures, whose durations are
    # CPU times that swing with the machine's load while the copy counts are fixed by the compile)
    metric: str = "time"


@dataclass(frozen=True)
class AdviceInputs:
    attention: str  # "2d", "3d" or "unknown"
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
class Option:
    id: str
    title: str
    backend: str
    when: str
    mechanism: str
    caveat: str
    backend_copy_behaviour: str  # from backends.toml
    backend_mindie_patterns: str


@dataclass(frozen=True)
class Recommendation:
    choice: str  # an option id, or "keep" when there is no Copy problem
    headline: str
    reasons: tuple[str, ...]
    inputs: AdviceInputs
    thresholds: Thresholds
    options: tuple[Option, ...]  # all four, so reports can show the alternatives
    heuristic_note: str


def _options() -> tuple[Option, ...]:
    backends = {b["name"]: b for b in load("backends")["backend"]}
    out = []
    for o in load("copy_options")["option"]:
        b = backends.get(o["backend"], {})
        out.append(Option(o["id"], o["title"], o["backend"], o["when"], o["mechanism"], o.get("caveat", ""),
                          b.get("copy_behaviour", ""), b.get("mindie_patterns", "")))
    return tuple(out)


def recommend(inputs: AdviceInputs, thresholds: Thresholds) -> Recommendation:
    options = _options()
    ratio, other, other_ratio = ((inputs.time_inflation, "count", inputs.count_inflation) if thresholds.metric == "time"
                                 else (inputs.count_inflation, "time", inputs.time_inflation))
    undefined, other_undefined = ((inputs.time_undefined, inputs.count_undefined) if thresholds.metric == "time"
                                  else (inputs.count_undefined, inputs.time_undefined))
    inflated = ratio >= thresholds.inflation
    heavy = inputs.npu_times and inputs.copy_share >= thresholds.share
    share_verdict = (f"{'>=' if heavy else '<'} threshold {thresholds.share:.0%}" if inputs.npu_times
                     else "not weighed: CPU time, which swings with the machine's load")
    reasons = [
        f"copy {thresholds.metric} inflation {_fmt(ratio, undefined)} (compile/eager) "
        f"{'>=' if inflated else '<'} threshold {thresholds.inflation:g} "
        f"({other}: {_fmt(other_ratio, other_undefined)})",
        f"compiled copy share {inputs.copy_share:.1%} of non-communication kernel time {share_verdict} "
        f"(eager: {inputs.eager_copy_share:.1%})",
        f"attention: {inputs.attention} ({inputs.attention_from})",
        "pattern hits: " + (f"{inputs.pattern_hits} ({inputs.pattern_hits_from})" if inputs.pattern_hits is not None
                            else f"unknown ({inputs.pattern_hits_from})"),
    ]
    if not (inflated or heavy):
        choice, headline = "keep", "keep the default backend: no Copy inflation beyond the thresholds"
    elif inputs.attention == "3d":
        choice = "A"
        headline = "option A: torchair_ge for this 3D-attention model with Copy inflation"
        if inputs.pattern_hits == 0:
            reasons.append("no pattern hits, so torchair_ge loses no fused kernels here")
    elif inputs.attention == "2d":
        choice = "B"
        headline = "option B: fix the patterns so fewer copies remain (2D attention)"
        if inputs.pattern_hits == 0:
            reasons.append("the patterns hit nothing: run `sdcompile debug` to find the first mismatch")
    else:
        choice = "A or B"
        headline = ("Copy inflation found; the choice depends on the attention: A (torchair_ge) for 3D/video "
                    "attention, B (fix the patterns) for 2D — pass --attn 2d|3d or --model")
    note = ("thresholds are heuristics (the recipe's 'ViewCopy doubling' and a copy share of about 15%): set them with "
            "--inflation-threshold and --share-threshold")
    return Recommendation(choice, headline, tuple(reasons), inputs, thresholds, options, note)


def _fmt(ratio: float, undefined: bool = False) -> str:
    if undefined:
        return "n/a (no copies in either)"
    return "inf (no copies in eager)" if ratio == float("inf") else f"{ratio:.2f}x"
