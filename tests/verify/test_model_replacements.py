"""Which of MindIE-SD 3.1.0's groups fuse which zoo model, on the running torch: every group alone on nine tiny
models, pinned in data/model_replacements.toml (one table per state of the version-dependent behaviours), and
checked against `verify --group G --model M`'s own count for each model's busiest group and for a group whose
pass raises."""

from __future__ import annotations

import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from torch_ranges import for_this_state

from sdcompile.core.target.group_runner import GroupRunner
from sdcompile.core.zoo.models import build_model
from sdcompile.phases.verify.model_level import run_model_level
from sdcompile.testing.numerics import DEFAULT_MIN_COSINE

pytestmark = pytest.mark.slow

TABLES = tomllib.loads((Path(__file__).parent / "data" / "model_replacements.toml").read_text(encoding="utf-8"))
STATES = TABLES["state"]
MODELS = ["flux", "wan", "sd3", "qwenimage", "hunyuanvideo", "cogvideox", "ltx", "pixart", "minimax_h3"]
# The generic residual gate on the NPU's kernel (MindIE-SD 3.1.0's Triton branch, run under the interpreter): it raises
# where a model's `x + gate * out` binds the [B,1,D] gate as y, and differs where it takes LTX's RoPE
# `x * cos + x_rotated * sin` with the per-token table as the gate (the kernel reads it as [B,1,D]); on Wan it passes
# (HunyuanVideo both: its gates raise, its RoPE differs)
NPU_VERDICTS = {("flux", "WanResidualGatePatternGroup"): {"raises"}, ("sd3", "WanResidualGatePatternGroup"): {"raises"},
                ("qwenimage", "WanResidualGatePatternGroup"): {"raises"},
                ("hunyuanvideo", "WanResidualGatePatternGroup"): {"raises", "differs"},
                ("cogvideox", "WanResidualGatePatternGroup"): {"raises"},
                ("ltx", "WanResidualGatePatternGroup"): {"differs"}}


@dataclass(frozen=True)
class GroupHits:
    group: str
    replacements: int
    by_pattern: dict[str, int]
    error: str | None  # the pass raised on this model


def survey_groups(target, built) -> tuple[int, list[GroupHits]]:
    """(graphs captured, every group of the target alone on them): the model compiled once as MindieSDBackend
    does, each group's pass applied to a copy of the graph its pattern pass receives (the group runner)."""
    from sdcompile.core.graph.capture import capture_graphs
    from sdcompile.core.graph.stages import STAGE_BEFORE_FREEZING

    capture = capture_graphs(built.module, built.inputs, model=built.name, dtype=built.dtype_name,
                             device=target.device.label, redundant_node_elimination=target.redundant_node_pass(),
                             redundant_node_elimination_name=target.REDUNDANT_NODE_PASS_NAME)
    stages = capture.stage(STAGE_BEFORE_FREEZING)
    found = []
    for group in target.groups:
        if not group.loaded:
            found.append(GroupHits(group.group, 0, {}, group.error or "the group's module did not import"))
            continue
        runner = GroupRunner(target.tree.root, [(group.group, target.registration_of(group.group))])
        runs = [runner.apply(stage.gm, group.group) for stage in stages]
        error = next((e for run in runs for e in run.errors), None)
        by_pattern = {} if error else dict(sum((run.by_pattern() for run in runs), Counter()))
        found.append(GroupHits(group.group, sum(by_pattern.values()), by_pattern, error))
    return len(stages), found


def test_every_table_covers_the_models():
    assert len(STATES) == len({frozenset(s["holds"]) for s in STATES}) >= 3
    for state in STATES:
        assert set(state["replacements"]) == set(MODELS), state["holds"]


@pytest.mark.parametrize("model", MODELS)
def test_replacements_of_every_group_on_the_model(target, model):
    built = build_model(model)
    graphs, groups = survey_groups(target, built)
    assert len(groups) == 16 and graphs == 1
    pinned = for_this_state(STATES)["replacements"][model]
    assert {g.group: "error" if g.error else g.replacements for g in groups} == {
        g.group: pinned.get(g.group, 0) for g in groups}
    for hits in groups:
        if hits.error:  # the pattern throws inside the matcher on this model: said, with where
            assert "mindiesd/compilation/patterns/" in hits.error, hits.error
    # verify compiles the model with one group enabled and counts the same
    busiest = max((g for g in groups if not g.error), key=lambda g: g.replacements)
    checked = [busiest] + [g for g in groups if g.error][:1]
    for hits in checked:
        level = run_model_level(target, target.group(hits.group), built, False, DEFAULT_MIN_COSINE, None,
                                classify_type7=False)
        wrong_on_npu = {k.check.verdict.value for k in level.kernels if not k.correct}
        assert wrong_on_npu == NPU_VERDICTS[(model, hits.group)] if (model, hits.group) in NPU_VERDICTS \
            else not wrong_on_npu, (model, hits.group, wrong_on_npu)
        if hits.error:
            assert level.error_source == "group" and level.replacements == 0 and not level.passed, level
        elif wrong_on_npu:  # replaced as counted, and not right on the NPU: the group fails here
            assert level.replacements == hits.replacements and not level.passed, level
        else:
            assert level.error is None and level.replacements == hits.replacements, level
            assert level.hits_by_pattern == hits.by_pattern
            assert level.numerics.passed, level.numerics
