"""Where a pattern that replaced its own search function computes something else: its replacement evaluated
against the search function node by node on the failing inputs (testing.input_transforms), read as the input the
replacement binds raw although the search function transforms it first, or the input one side never reads."""

from __future__ import annotations

import inspect
from pathlib import Path

from sdcompile.core.target.failures import describe_error
from sdcompile.phases.verify.results import NumericsDifference
from sdcompile.testing.input_transforms import find_input_transform, ignored_inputs, traced_values
from sdcompile.testing.numerics import compare


def explain(pattern_cls, inputs, min_cosine: float, approximation: float, tree_root: Path) -> NumericsDifference:
    """The difference between `pattern_cls.replacement` and `pattern_cls.pattern` on `inputs`."""
    import torch

    names = list(inspect.signature(pattern_cls.pattern).parameters)
    where = _pattern_file(pattern_cls, tree_root)
    try:
        with torch.no_grad():
            expected = pattern_cls.pattern(*inputs)

            def judge(got, want):
                return compare(got, want, min_cosine, inputs, approximation)

            nodes = traced_values(pattern_cls.pattern, inputs, names)
            transform = find_input_transform(nodes, names, inputs, pattern_cls.replacement, expected, judge)
            ignored = () if transform else ignored_inputs(pattern_cls.pattern, pattern_cls.replacement, inputs, names)
    except Exception as exc:  # noqa: BLE001 - the verdict (numerics fail) stands without the detail
        return NumericsDifference(where, None, (), None, (), describe_error(exc, tree_root))
    if transform is None:
        return NumericsDifference(where, None, (), None, ignored)
    return NumericsDifference(where, transform.role, transform.steps, transform.numerics.cosine, ())


def _pattern_file(pattern_cls, tree_root: Path) -> str | None:
    try:
        path = Path(inspect.getsourcefile(pattern_cls) or "")
    except TypeError:
        return None
    try:
        return str(path.resolve().relative_to(Path(tree_root).resolve()))
    except ValueError:
        return str(path) if str(path) else None
