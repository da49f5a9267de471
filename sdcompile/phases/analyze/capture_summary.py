"""The summary of a capture: how many graphs and stages, and how each stage holds the model's parameters."""

from __future__ import annotations

from sdcompile.core.graph.stages import STAGE_AFTER_FREEZING, STAGE_BEFORE_FREEZING
from sdcompile.phases.analyze.results import CaptureSummary, Why
from sdcompile.util.reasons import Reason


def _parameter_counts(capture, stage: str) -> tuple[int, int, int]:
    """(parameters as placeholders, parameters as get_attr, constants freeze() folded) in one stage."""
    ph = ga = folded = 0
    for st in capture.stage(stage):
        for name, origin in st.origins.items():
            if origin.kind == "folded constant":
                folded += 1
            elif origin.kind != "parameter":
                continue
            elif st.node(name).op == "placeholder":
                ph += 1
            else:
                ga += 1
    return ph, ga, folded


def capture_summary(capture, folder: str) -> CaptureSummary:
    """`capture` is None when nothing was compiled (no requested primitive ran)."""

    if capture is None:
        return CaptureSummary(0, (), False, (0, 0), (0, 0), Reason.of(Why.NOT_COMPILED), "")
    if not capture.graphs:
        return CaptureSummary(0, (), False, (0, 0), (0, 0), Reason.of(Why.NO_GRAPHS, backend=capture.metadata.backend),
                              "")
    b_ph, b_ga, _ = _parameter_counts(capture, STAGE_BEFORE_FREEZING)
    meta = capture.metadata
    frozen = STAGE_AFTER_FREEZING in meta.stages
    a_ph, a_ga, a_folded = _parameter_counts(capture, STAGE_AFTER_FREEZING)
    after = [a_ph, a_ga] if frozen else None
    return CaptureSummary(
        graphs=meta.graph_count,
        stages=meta.stages,
        prepare_freezing=meta.prepare_freezing,
        parameters_before_freezing=(b_ph, b_ga),
        parameters_after_freezing=(a_ph, a_ga) if frozen else None,
        note=Reason.of(Why.CAPTURED, prepare_freezing=meta.prepare_freezing, before=[b_ph, b_ga], after=after,
                       folded=a_folded, torch=meta.torch_version),
        folder=folder,
        redundant_node_elimination=meta.redundant_node_elimination,
        breaks=capture.breaks,
        untraced=capture.untraced,
    )
