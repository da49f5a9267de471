"""How many replacements each of the target's pattern groups makes on one model, from one capture.

`sdcompile verify --group G --model M` compiles the model once per group. To survey every group on a model, the
model is compiled once instead (MindIE-SD's backend stages: the target's redundant-node pass, then the graph the
pattern pass receives, `graph_rewrite_before_freezing`), and each group's pass is applied alone to a copy of that
graph: the same pass on the same graph, so the counts are verify's (tests check both on every model they survey).
A group whose pass raises on the model is reported with the error, as verify reports a failed compile.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from sdcompile.core.graph.nodes import graph_copy


@dataclass(frozen=True)
class GroupHits:
    group: str
    replacements: int
    by_pattern: dict[str, int]
    error: str | None  # the pass raised on this model (describe_error's text)


@dataclass(frozen=True)
class ModelSurvey:
    model: str
    dtype: str
    graphs: int  # graphs the capture compiled (more than one: graph breaks)
    groups: tuple[GroupHits, ...]

    def hits(self) -> dict[str, int | str]:
        """group -> replacements, or "error" when the pass raised."""
        return {g.group: "error" if g.error else g.replacements for g in self.groups}


def survey_groups(target, built) -> ModelSurvey:
    """Every loaded group of `target` on `built` (a zoo BuiltModel), each alone on the captured graph."""
    import torch

    from sdcompile.core.graph.capture import capture_graphs
    from sdcompile.core.graph.stages import STAGE_BEFORE_FREEZING
    from sdcompile.core.target.failures import describe_error
    from sdcompile.core.target.package_import import PACKAGE
    from sdcompile.phases.debug.subjects import RNE_NAME

    device = target.device
    rne = sys.modules[f"{PACKAGE}.compilation.passes.redundant_node_elimination_pass"].ReduandantNodeEliminationPass()
    module = built.module.to(device.tensor_device)
    inputs = {k: v.to(device.tensor_device) if isinstance(v, torch.Tensor) else v for k, v in built.inputs.items()}
    capture = capture_graphs(module, inputs, model=built.name, dtype=built.dtype_name, device=device.label,
                             redundant_node_elimination=rne, redundant_node_elimination_name=RNE_NAME)
    stages = capture.stage(STAGE_BEFORE_FREEZING)
    rpp = sys.modules[f"{PACKAGE}.compilation.passes.register_pattern_to_pass"]
    results = []
    for group in target.groups:
        if not group.loaded:
            results.append(GroupHits(group.group, 0, {}, group.error or "the group's module did not import"))
            continue
        error = None
        with torch.no_grad(), target.session([group.group]) as session:
            try:
                session.activate()
                for stage in stages:
                    rpp.patterns(graph_copy(stage.gm))
            except Exception as exc:  # noqa: BLE001 - a pattern that throws inside the matcher is this group's answer
                error = describe_error(exc, target.tree.root)
            by_pattern = {k: v for k, v in session.hits_by_pattern.items() if v}
        results.append(GroupHits(group.group, sum(by_pattern.values()), by_pattern, error))
    return ModelSurvey(built.name, built.dtype_name, len(stages), tuple(results))
