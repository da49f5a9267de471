"""A bf16 compile whose fused kernel rounds once (a LayerNorm and its modulation in float32) differs from eager's
per-op roundings past the bf16 tolerance once a wide projection follows: judged against the float32 forward it is
as close as eager, and a fusion that is slightly wrong is not."""

from __future__ import annotations

import torch

from sdcompile.phases.verify.render import numerics_note
from sdcompile.testing.numerics import compare
from sdcompile.testing.reference import float32_forward, judged_against_reference, worth_a_reference

D = 3072


def _case(shift_kept: float = 1.0):
    gen = torch.Generator().manual_seed(0)
    x = (torch.randn(1, 64, D, generator=gen) * 4).bfloat16()
    scale = (torch.randn(1, 1, D, generator=gen) * 0.5).bfloat16()
    shift = torch.randn(1, 1, D, generator=gen).bfloat16()
    head = torch.randn(256, D, generator=gen) * 0.2  # a final projection over the model's width

    def chain(xx, sc, sh):  # each op rounds in its operands' dtype, as eager does
        return (torch.nn.functional.layer_norm(xx, (D,)) * (1 + sc) + sh) @ head.to(xx.dtype).T

    eager = chain(x, scale, shift)
    fused = (torch.nn.functional.layer_norm(x.float(), (D,)) * (1 + scale.float()) + shift_kept * shift.float())
    compiled = fused.bfloat16() @ head.bfloat16().T
    reference = chain(x.float(), scale.float(), shift.float())
    return compare(compiled, eager, inputs=[x]), compiled, eager, reference


def test_a_kernel_rounding_once_is_judged_against_the_float32_forward():
    numerics, compiled, eager, reference = _case()
    assert not numerics.passed and not numerics.within_tolerance and numerics.cosine > 0.9999
    assert worth_a_reference(numerics)
    judged = judged_against_reference(numerics, compiled, eager, reference)
    assert judged.passed and judged.reference_error < judged.eager_reference_error
    note = numerics_note(judged)
    assert f"{numerics.outside} of {numerics.elements} elements differ from eager" in note
    assert "within what bfloat16 rounding costs eager itself" in note


def test_a_fusion_slightly_wrong_everywhere_stays_a_failure():
    numerics, compiled, eager, reference = _case(shift_kept=0.97)  # the cosine alone would pass it
    assert numerics.cosine > 0.999 and worth_a_reference(numerics)
    judged = judged_against_reference(numerics, compiled, eager, reference)
    assert not judged.passed and judged.reference_error > 2 * judged.eager_reference_error
    assert "compiled is further from it than eager" in numerics_note(judged)


def test_the_float32_forward_runs_a_copy_and_leaves_the_model_as_it_was():
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.LayerNorm(16), torch.nn.Linear(16, 4)).bfloat16()
    inputs = {"input": torch.randn(2, 16).bfloat16()}
    out = float32_forward(module, inputs)
    assert out.dtype == torch.float32 and next(module.parameters()).dtype == torch.bfloat16
    assert torch.allclose(out, module.float()(inputs["input"].float()))
