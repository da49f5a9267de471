"""integrate's count contract: every fused call of the op launches its kernel at run time (the recipe's
check_fusion_hit); a call whose NPU branch falls back to eager is counted as such."""

import dataclasses
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
GATES = Path(__file__).parent / "data" / "gated_residuals.py"


def _compile(tree, factory):
    from sdcompile.core.zoo.models import build_model, resolve_model
    from sdcompile.testing.model_runs import compile_and_compare

    built = build_model(resolve_model(None, f"{GATES}:{factory}"), "fp32")
    return compile_and_compare(built, tree, None, 0.99)


def test_a_fused_call_that_falls_back_at_run_time_is_counted(target):
    run = _compile(target.tree.root, "headwise_gate")
    assert run.error is None and run.numerics_passed  # right: the fallback is the eager chain
    assert run.fused_calls == {"mindiesd::residual_gate_add": 1}
    assert run.fell_back == {"mindiesd::residual_gate_add": 1}  # and no kernel: no gain at this site


def test_a_fused_call_that_launches_its_kernel_keeps_the_contract(target):
    run = _compile(target.tree.root, "per_sample_gate")
    assert run.fused_calls == {"mindiesd::residual_gate_add": 1} and run.fell_back == {}


def test_integrate_fails_layer_one_when_the_ops_calls_fall_back(target):
    from sdcompile.core.profiles.catalog import load_catalog
    from sdcompile.phases.integrate.phase import _layer1_model

    run = _compile(target.tree.root, "per_sample_gate")
    adaln = load_catalog().resolve_op("adaln")
    # the same run as if its AdaLN fused op (scale_shift, counted the same way) had fallen back on two of four calls
    fell = dataclasses.replace(run, fused_calls={"mindiesd::scale_shift": 4}, fell_back={"mindiesd::scale_shift": 2},
                               op_fused_nodes=4)
    layer = _layer1_model(fell, adaln)
    assert layer.verdict == "fail" and "count contract broken: 2 of 4 call(s) of mindiesd::scale_shift" in layer.detail
    assert _layer1_model(dataclasses.replace(fell, fell_back={}), adaln).verdict == "pass"
