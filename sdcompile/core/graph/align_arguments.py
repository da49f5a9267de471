"""How torch's matcher compares a node's arguments: the call form it normalises the model node to, literal
equality, and which literals the structure stage ignores."""

from __future__ import annotations

import operator

_IGNORED_AT_STRUCTURE = None


def _ignored_types() -> tuple[type, ...]:
    global _IGNORED_AT_STRUCTURE
    if _IGNORED_AT_STRUCTURE is None:
        import torch

        # gen_pattern_and_search_gm's ignore_types for the first match
        _IGNORED_AT_STRUCTURE = (int, float, list, torch.device, torch.dtype)
    return _IGNORED_AT_STRUCTURE


def ignorable(value, pattern_target) -> bool:
    """Whether the structure stage ignores this pattern literal (fx_to_pattern turned it into Ignored())."""
    types = _ignored_types()
    if pattern_target is operator.getitem:  # indexing is kept exact even at the first stage
        types = tuple(t for t in types if t is not int)
    if type(value) in types:
        return True
    return isinstance(value, (list, tuple)) and bool(value) and all(ignorable(v, pattern_target) for v in value)


def literal_equal(a, b) -> bool:
    """Equality as the matcher sees it (`!=` on literals; lists element by element after pytree flattening)."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(literal_equal(x, y) for x, y in zip(a, b, strict=True))
    return not (a != b)


def normalized_call(m, p):
    """The model node's arguments in the pattern's call form, as the matcher normalises them; (None, None) when
    the structures differ (argument count, or a keyword the pattern passes that the model does not)."""
    args, kwargs = m.args, dict(m.kwargs)
    if len(kwargs) < len(p.kwargs):
        from torch.fx.operator_schemas import normalize_function

        try:
            normalized = normalize_function(m.target, m.args, m.kwargs) if callable(m.target) else None
        except Exception:  # noqa: BLE001 - an op without a schema: compare as written
            normalized = None
        if normalized is None:
            return None, None
        args, kwargs = normalized
    if len(args) != len(p.args):
        return None, None
    kwargs = {k: v for k, v in kwargs.items() if k in p.kwargs}
    if set(kwargs) != set(p.kwargs):
        return None, None
    return args, kwargs
