"""What debug compiles: the model and each pattern's own search function, captured at every stage the backend
sees; the phase-1 sites of the model."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from sdcompile.core.graph.capture import capture_graphs
from sdcompile.core.graph.nodes import op_name
from sdcompile.core.graph.stages import STAGE_BEFORE_FREEZING
from sdcompile.core.graph.tensor_origins import TensorOrigin
from sdcompile.testing.numerics import example_inputs

RNE_NAME = "the target's ReduandantNodeEliminationPass"


# ------------------------------------------------------------------------------------------------ subjects
@dataclass
class Subject:
    """A module compiled once and captured at every stage: the model, or one pattern's search function."""

    name: str
    capture: Any  # graph.capture.GraphCapture
    stages: list  # StageGraph of the debugged stage, one per captured graph
    sites: list = field(default_factory=list)  # CandidateSite
    unit_of: str | None = None  # the pattern name, for a unit subject
    _origins: dict = field(default_factory=dict)

    def origins(self, stage) -> dict:
        """What each placeholder / get_attr of `stage` holds; constants freeze() folded are traced back to the
        module tensors and ops they were computed from (in the graph before freezing)."""
        key = id(stage)
        if key not in self._origins:
            self._origins[key] = traced_origins(self.capture, stage)
        return self._origins[key]


def traced_origins(capture, stage) -> dict:
    origins = dict(stage.origins)
    graph = next((g for g in capture.graphs if g.index == stage.graph_index), None)
    before = graph.stages.get(STAGE_BEFORE_FREEZING) if graph is not None else None
    if before is None or before is stage:
        return origins
    for name, origin in stage.origins.items():
        if origin.kind != "folded constant":
            continue
        try:
            node = before.node(name)
        except KeyError:
            continue
        ops, tensors, seen, todo = Counter(), [], set(), [node]
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            if current.op == "call_function":
                ops[op_name(current)] += 1
                todo.extend(current.all_input_nodes)
            elif current.op in ("placeholder", "get_attr"):
                held = before.origins.get(current.name)
                tensors.append(held.describe() if held is not None else current.name)
        if tensors:
            steps = ", ".join(f"{op} ×{n}" if n > 1 else op for op, n in ops.items()) or "no op"
            origins[name] = TensorOrigin("folded constant",
                                         f"{origin.name} = {steps} of {', '.join(sorted(set(tensors)))}")
    return origins


class _SearchFunction:
    @staticmethod
    def build(fn):
        import torch

        class SearchFunction(torch.nn.Module):
            """forward is the pattern's own search function, as upstream's unit tests write their models."""

            def forward(self, inputs):
                return fn(*inputs)

        return SearchFunction()


_UNIT_CAPTURES: dict[tuple, Any] = {}  # (tree, pattern, prepare_freezing) -> GraphCapture, per process


def unit_capture(target, pattern_cls, rne, device):
    """The pattern's search function compiled like the model (cached per process: it depends on nothing else)."""
    import torch

    key = (str(target.tree.root), pattern_cls.name(), device.mode)
    if key not in _UNIT_CAPTURES:
        values, _specs = example_inputs(pattern_cls)
        values = [v.to(device.tensor_device) if isinstance(v, torch.Tensor) else v for v in values]
        module = _SearchFunction.build(pattern_cls.pattern)
        _UNIT_CAPTURES[key] = capture_graphs(
            module, {"inputs": tuple(values)}, model=f"unit {pattern_cls.name()}", dtype="", device=device.label,
            redundant_node_elimination=rne, redundant_node_elimination_name=RNE_NAME)
    return _UNIT_CAPTURES[key]


def locate_sites(built, op: str) -> tuple[tuple, str | None]:
    """Phase-1 sites: the implementations analyze's rules locate by running the model once (not the producers of
    AdaLN's shift/scale/gate, nor a call that ran no modulation: neither holds a chain)."""
    from dataclasses import replace

    try:
        from sdcompile.core.zoo.locate import locate
        from sdcompile.core.zoo.runtrace import trace_forward

        trace = trace_forward(built.module, built.inputs)
        located = (loc for loc in locate(trace, type(built.module), (op,)).get(op, ()) if not loc.producer_only)
        return tuple(replace(loc, sites=tuple(s for s in loc.sites if s.modulates)) for loc in located), None
    except Exception as exc:  # noqa: BLE001 - anchors still find the sites
        return (), f"phase-1 location failed ({type(exc).__name__}: {exc}); candidate sites come from op anchors only"
