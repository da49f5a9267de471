"""The maintainers' carrier rule: register_replacement (a module weight as a pattern input) where the graph the
pattern pass sees holds the implementation's module tensors as placeholders, else a GraphPatternEntry written from
that graph; both run in the pattern pass, before freezing. Decided on how the captured graphs hold the module
tensors (their Holder), never on display text. Custom graph passes are not a carrier: upstream forbids them."""

from __future__ import annotations

from sdcompile.phases.analyze import render
from sdcompile.phases.analyze.results import PATTERN_STAGE, Holder, PathDecision, TensorSource

REPLACEMENT = "register_replacement"
GRAPH_ENTRY = "GraphPatternEntry"
MODULE_ATTRIBUTE = "module attribute"


def decide(tensors: tuple[TensorSource, ...], capture) -> PathDecision:
    """The path for an implementation reading `tensors` (module attributes; none: only function inputs)."""
    if not tensors:
        return PathDecision("function input", REPLACEMENT, PATTERN_STAGE, render.RULE_FUNCTION_INPUT,
                            render.WHY_FUNCTION_INPUT)
    rule = render.RULE_MODULE_ATTRIBUTE
    first = tensors[0]
    befores = {t.before_holder for t in tensors}
    if befores <= {Holder.PLACEHOLDER}:  # lifted into graph inputs: a pattern input binds them
        return PathDecision(MODULE_ATTRIBUTE, REPLACEMENT, PATTERN_STAGE, rule,
                            render.why_lifted(first, capture.metadata.torch_version))
    if Holder.NOT_CAPTURED in befores:  # torch.compile failed: the maintainers' default carrier, unchecked
        return PathDecision(MODULE_ATTRIBUTE, REPLACEMENT, PATTERN_STAGE, rule,
                            render.why_not_captured(capture.metadata.backend))
    if Holder.GET_ATTR in befores:  # a constant already before freezing: no pattern input can bind it
        holder = next(t for t in tensors if t.before_holder is Holder.GET_ATTR)
        return PathDecision(MODULE_ATTRIBUTE, GRAPH_ENTRY, PATTERN_STAGE, rule, render.why_constant(holder))
    return PathDecision(MODULE_ATTRIBUTE, REPLACEMENT, PATTERN_STAGE, rule, render.why_unbound(first))
