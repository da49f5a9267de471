"""The recipe's path rule: register_replacement or a custom graph pass, and at which stage, decided on how the
captured graphs hold the implementation's module tensors (their Holder), never on display text."""

from __future__ import annotations

from sdcompile.phases.analyze import render
from sdcompile.phases.analyze.results import AFTER_FREEZING_STAGE, PATTERN_STAGE, Holder, PathDecision, TensorSource

REPLACEMENT = "register_replacement"
GRAPH_PASS = "custom graph pass"
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
    if Holder.NOT_CAPTURED in befores:  # torch.compile failed, so the stage cannot be checked
        return PathDecision(MODULE_ATTRIBUTE, GRAPH_PASS, AFTER_FREEZING_STAGE, rule,
                            render.why_not_captured(capture.metadata.backend))
    if Holder.GET_ATTR in befores:  # a constant already before freezing: no pattern input can bind it
        holder = next(t for t in tensors if t.before_holder is Holder.GET_ATTR)
        return PathDecision(MODULE_ATTRIBUTE, GRAPH_PASS, AFTER_FREEZING_STAGE, rule, render.why_constant(holder))
    return PathDecision(MODULE_ATTRIBUTE, REPLACEMENT, PATTERN_STAGE, rule, render.why_unbound(first))
