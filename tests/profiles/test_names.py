"""Kernel names as real profiles carry them: GE-style Level0 names map to the op types the Level1 profile of the same
workload reports (each [[name_rule]] on real names), HCCL names lose their per-run number before the diff, and the
two sides at different profiler levels are warned about."""

from __future__ import annotations

import pytest
from layouts import COPY, MATMUL, Row, layers, rows, torch_npu_session

from sdcompile.core.profiles.catalog import load_catalog
from sdcompile.core.profiles.profile import load_profile
from sdcompile.phases.integrate.phase import run_integrate

CAT = load_catalog()

# Level0 Name -> the Type the Level1 profile of the same workload reports for it
LEVEL0_NAMES = {
    "trans_TransData_17": "TransData",
    "trans_Cast_10": "Cast",
    "Conv2DBackpropInput5": "Conv2DBackpropInput",
    "atomic_memset-1_271": "MemSet",
    "ReduceSum47": "ReduceSumD",
    "LayerNorm90": "LayerNorm",
    "MatMulV231": "MatMulV2",  # the longest known type, not MatMulV
    "aclnnInplaceCopy_TensorMoveAiCore_TensorMove": "TensorMove",
    "FastGeluV2": "FastGeluV2",  # a known type stays whole
    "triton_poi_fused_0": "triton_poi_fused_0",  # no rule: the name itself
}


@pytest.mark.parametrize(("name", "want"), LEVEL0_NAMES.items())
def test_level0_names_map_to_level1_types(name, want):
    assert CAT.op_type_from_name(name) == want


def test_every_name_rule_is_exercised_by_a_real_name():
    used = {rule.label for name in LEVEL0_NAMES for rule in CAT.name_rules if rule.regex.match(name)}
    assert used == {rule.label for rule in CAT.name_rules}


def test_level0_families_follow_the_derived_types():
    assert CAT.classify("trans_TransData_17", None).family == "other_layout"
    assert CAT.classify("Conv2DBackpropInput5", None).family == "conv"
    assert CAT.classify("ReduceSum47", None).family == "normalization"


HCCL = [("hcom_allReduce__{n}_0_1", "hcom_allReduce_", "HCCL"), ("hcom_allGather__{n}_1_1", "hcom_allGather_", "HCCL")]


def _hccl_run(root, n, rank):
    kernels = [MATMUL, COPY] + [(name.format(n=n), t, core) for name, t, core in HCCL]
    return torch_npu_session(root, rank=rank, timestamp=f"2025060110101{rank}000", table=rows(kernels))


def test_hccl_renames_are_not_appear_or_vanish(tmp_path):
    _hccl_run(tmp_path / "eager", 586, 0)
    _hccl_run(tmp_path / "compile", 271, 0)
    report = run_integrate(tmp_path / "eager", tmp_path / "compile")
    assert report.diff.eager_only == () and report.diff.compile_only == ()
    row = next(r for r in report.diff.by_name if r.key == "hcom_allReduce")
    assert (row.status, row.eager_count, row.compile_count, row.family) == ("both", 1, 1, "communication")
    assert CAT.name_key("hcom_allReduce__586_0_1") == CAT.name_key("hcom_allReduce__271_0_1") == "hcom_allReduce"


def test_different_profiler_levels_are_warned(tmp_path):
    level0 = [Row(n, "", "AI_CORE", 1_000 + i, 1718873628_000000_000 + i * 10_000)
              for i, n in enumerate(LEVEL0_NAMES)]
    torch_npu_session(tmp_path / "eager", rank=0, timestamp="20250601101010123", table=level0, level="Level0",
                      untyped=True)
    torch_npu_session(tmp_path / "compile", rank=0, timestamp="20250601111010123", table=layers(2, [MATMUL, COPY]))
    report = run_integrate(tmp_path / "eager", tmp_path / "compile")
    assert any(n.startswith("warning: the sides are at different profiler levels: eager Level0, compile Level1")
               for n in report.notes)
    assert any("(most rows: a Level0 profile)" in n for n in report.notes)
    eager = load_profile(tmp_path / "eager", CAT)
    assert {g.name: g.op_type for g in eager.groups} == LEVEL0_NAMES
