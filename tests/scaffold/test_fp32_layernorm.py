"""A LayerNorm computed in float32 (diffusers' FP32LayerNorm: `F.layer_norm(x.float(), ..., weight.float(),
bias.float())`), then modulated: EasyAnimate's blocks. The norm's weight and bias reach the chain through a cast of
the parameter, and a generated carrier still counts them as the model's parameters, so it replaces every site."""

from __future__ import annotations

import pytest

from sdcompile.core.torchcompat.behaviours import holds

ENTRIES_ONLY = holds("decomposition-override")  # LayerNorm chains need a GraphPatternEntry on this torch


@pytest.mark.slow
def test_a_layernorm_whose_parameters_are_cast_to_float32_is_replaced_at_every_site(target, tmp_path):
    from sdcompile.phases.scaffold.phase import scaffold

    result = scaffold(model="EasyAnimateTransformer3DModel", op="adaln", repo=target, workdir=tmp_path / "ws",
                      dry_run=True)
    assert result.decision == "generate" and result.gate == "pass", result.decision_reason
    fp32_sites = [r for r in result.sites if "EasyAnimateLayerNormZero" in r.implementation]
    assert len(fp32_sites) == 3, [r.site for r in result.sites]  # norm1 (its two chains: tokens, text) and norm2
    assert all(r.check is not None and r.check.hit for r in result.sites), [(r.site, r.check) for r in result.sites]
    fp32 = next(v for v in result.variants if "EasyAnimateLayerNormZero" in v.implementation)
    assert {i.role: i.dtype for i in fp32.inputs}["weight"] == "torch.float32"  # the cast parameter, as in the graph
    if ENTRIES_ONLY:
        assert {v.path for v in result.variants} == {"graph-entry"}
