"""The maintainers' carrier rule: register_replacement (a module weight as a pattern input) where the graph the
pattern pass sees holds the implementation's module tensors as placeholders, else a GraphPatternEntry written from
that graph; both run in the pattern pass, before freezing. Decided on how the captured graphs hold the module
tensors (their Holder), never on display text. Custom graph passes are not a carrier: upstream forbids them."""

from __future__ import annotations

from sdcompile.phases.analyze.results import PATTERN_STAGE, Held, Holder, PathDecision, TensorSource, Why
from sdcompile.phases.choices import Carrier
from sdcompile.util.reasons import Reason
from sdcompile.util.serialize import to_jsonable

REPLACEMENT, GRAPH_ENTRY = Carrier.REPLACEMENT, Carrier.GRAPH_ENTRY
MODULE_ATTRIBUTE = "module attribute"


def decide(tensors: tuple[TensorSource, ...], capture) -> PathDecision:
    """The path for an implementation reading `tensors` (module attributes; none: only function inputs)."""
    if not tensors:
        return PathDecision("function input", REPLACEMENT, PATTERN_STAGE, Reason.of(Why.FUNCTION_INPUT))
    first = tensors[0]
    befores = {t.before.holder for t in tensors}
    if befores <= {Holder.PLACEHOLDER}:  # lifted into graph inputs: a pattern input binds them
        return PathDecision(MODULE_ATTRIBUTE, REPLACEMENT, PATTERN_STAGE,
                            Reason.of(Why.LIFTED, tensor=first.tensor, before=_facts(first.before),
                                      after=_facts(first.after), torch=capture.metadata.torch_version))
    if Holder.NOT_CAPTURED in befores:  # torch.compile failed: the maintainers' default carrier, unchecked
        return PathDecision(MODULE_ATTRIBUTE, REPLACEMENT, PATTERN_STAGE,
                            Reason.of(Why.CAPTURE_FAILED, backend=capture.metadata.backend))
    if Holder.GET_ATTR in befores:  # a constant already before freezing: no pattern input can bind it
        held = next(t for t in tensors if t.before.holder is Holder.GET_ATTR)
        return PathDecision(MODULE_ATTRIBUTE, GRAPH_ENTRY, PATTERN_STAGE,
                            Reason.of(Why.CONSTANT, tensor=held.tensor, before=_facts(held.before)))
    return PathDecision(MODULE_ATTRIBUTE, REPLACEMENT, PATTERN_STAGE,
                        Reason.of(Why.UNBOUND, tensor=first.tensor, before=_facts(first.before)))


def _facts(held: Held) -> dict:
    """A Held as a reason's fact: as JSON holds it, so a resumed result words it the same."""
    return to_jsonable(held)
