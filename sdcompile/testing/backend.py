"""What a pattern test checks, one function each (in the spirit of vLLM's TestBackend): the graph before and after
the pattern pass (the fused op there, the chain it replaces gone) and numerics against eager.

`sdcompile verify` and the generated pattern and graph-pass tests (templates/*_test.py.j2) call these same
functions, so a generated test and verify cannot disagree on what "replaced" and "close enough" mean. Generated
tests import only this module and sdcompile.testing.pytest_plugin, the stable surface for code in a user's tree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sdcompile.core.npu.emulation.tree_ops import tree_fallback
from sdcompile.core.zoo.build_options import ModelBuild
from sdcompile.core.zoo.models import build_model, resolve_model
from sdcompile.testing.numerics import DEFAULT_MIN_COSINE, Numerics, compare, output_tensors

# ops every traced graph may keep whatever the pass did: tuple unpacking of a multi-output op
_STRUCTURAL_OPS = frozenset({"getitem"})


@dataclass(frozen=True)
class GraphCheck:
    """The graph after the pass against the graph before it."""

    fused_ops_expected: tuple[str, ...]  # custom-op targets the replacement traces to
    fused_ops_found: dict[str, int]  # how often each appears after the pass
    original_ops: tuple[str, ...]  # ops of the chain the replacement does not contain
    originals_left: dict[str, int]  # those still in the graph after the pass (empty: all gone)
    fused_present: bool | None  # None when the replacement calls no fused op
    originals_gone: bool

    @property
    def passed(self) -> bool:
        return self.fused_present is not False and self.originals_gone


def check_graph(before: Mapping[str, int], after: Mapping[str, int], fused_ops: Iterable[str],
                original_ops: Iterable[str] | None = None, replacement_ops: Iterable[str] = ()) -> GraphCheck:
    """`before`/`after`: op -> count in the graph the pass received and returned. `original_ops`: the chain's
    ops that must be gone; None means every op of `before` that the replacement (`replacement_ops`) does not
    itself contain, which is right when the compiled module is the chain alone (a pattern's search function)."""
    expected = tuple(fused_ops)
    if original_ops is None:
        original_ops = set(before) - set(replacement_ops) - _STRUCTURAL_OPS
    originals = tuple(sorted(set(original_ops)))
    found = {op: after.get(op, 0) for op in expected}
    left = {op: after[op] for op in originals if after.get(op, 0)}
    return GraphCheck(expected, found, originals, left, all(found.values()) if expected else None, not left)


def assert_graph(check: GraphCheck, before: Mapping[str, int] | None = None, fused_count: int | None = None) -> None:
    """Fail with what the graph holds unless the pass did its job: every expected fused op present (exactly
    `fused_count` times when given), none of the chain's ops left, and (given `before`) the chain there first."""
    if before is not None:
        missing = [op for op in check.original_ops if not before.get(op, 0)]
        assert not missing, f"the chain's ops {missing} are not in the graph before the pass: {dict(before)}"
    if fused_count is not None:
        wrong = {op: n for op, n in check.fused_ops_found.items() if n != fused_count}
        assert not wrong, f"expected each fused op {fused_count} time(s) after the pass, found {wrong}"
    assert check.fused_present is not False, f"fused op missing after the pass: {check.fused_ops_found}"
    assert check.originals_gone, f"chain ops left after the pass: {check.originals_left}"


def assert_numerics(compiled: Any, eager: Any, inputs: Any = (), approximation: float = 0.0,
                    min_cosine: float = DEFAULT_MIN_COSINE) -> Numerics:
    """Fail unless the compiled outputs match eager as `sdcompile verify` requires: cosine >= `min_cosine` and
    elementwise within the tolerance of the least precise dtype among outputs and `inputs` (plus the fused op's
    documented `approximation`), everything finite. Returns the measurement."""
    numerics = compare(compiled, eager, min_cosine, output_tensors(inputs), approximation)
    assert numerics.passed, (
        f"compiled vs eager: cosine {numerics.cosine:.6f} (gate {numerics.min_cosine}), max |diff| "
        f"{numerics.max_abs:.3g}, {numerics.outside} of {numerics.elements} elements outside atol {numerics.atol:.3g} "
        f"+ rtol {numerics.rtol:.3g} ({numerics.dtype})")
    return numerics


def zoo_model(spec: Mapping[str, Any], dtype: str):
    """The model a generated test was written from: `spec` is the resolve_model() keywords it recorded, `build` as
    the ModelBuild fields (size, config, num_layers, inputs, capture)."""

    named = {k: v for k, v in spec.items() if k != "build"}
    return build_model(resolve_model(**named, build=ModelBuild(**spec.get("build", {}))), dtype)


def fused_ops_as_meant():
    """A context in which MindIE-SD's Python fused ops (residual_gate_add, scale_shift, ...) compute what they mean,
    the tree's torch fallback, instead of their NPU (Triton) kernel: for references a compiled model is judged
    against. Generated tests use it."""

    return tree_fallback()
