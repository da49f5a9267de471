"""Locate by running: facts about diffusers 0.42 models that the recorded forward must find (no compile here)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from sdcompile.core.zoo.locate import locate
from sdcompile.core.zoo.models import build_model, resolve_model
from sdcompile.core.zoo.runtrace import trace_forward

HANDWRITTEN = Path(__file__).resolve().parent / "data" / "handwritten_model.py"


@cache
def located(name: str, dtype: str = "bf16"):
    spec = resolve_model(model_file=name) if name.endswith(":build") else resolve_model(name)
    built = build_model(spec, dtype)
    trace = trace_forward(built.module, built.inputs)
    return locate(trace, type(built.module)), trace


def impl(name: str, op: str, display: str):
    found = {i.display_name: i for i in located(name)[0][op]}
    assert display in found, sorted(found)
    return found[display]


def test_flux_qk_norms_are_torch_rmsnorm_with_the_weight_a_module_attribute():
    rms = impl("flux", "rmsnorm", "torch.nn.RMSNorm")
    assert rms.kind == "class" and rms.scope == "torch"
    paths = {s.path for s in rms.sites}
    assert {"transformer_blocks.0.attn.norm_q", "transformer_blocks.0.attn.norm_k",
            "transformer_blocks.0.attn.norm_added_q", "transformer_blocks.0.attn.norm_added_k",
            "single_transformer_blocks.0.attn.norm_q", "single_transformer_blocks.0.attn.norm_k"} == paths
    reads = {(r.site, r.tensor, r.kind) for r in rms.reads}
    assert ("transformer_blocks.0.attn.norm_q", "transformer_blocks.0.attn.norm_q.weight", "parameter") in reads
    assert "class *RMSNorm" in rms.matched_by
    assert [i.display_name for i in located("flux")[0]["rmsnorm"]] == ["torch.nn.RMSNorm"]


def test_flux_rope_is_the_shared_apply_rotary_emb():
    rope = impl("flux", "rope", "embeddings.apply_rotary_emb")
    assert rope.qualified_name == "diffusers.models.embeddings.apply_rotary_emb"
    assert rope.kind == "function" and rope.scope == "diffusers (shared)"
    assert {s.path for s in rope.sites} == {"transformer_blocks.0.attn", "single_transformer_blocks.0.attn"}
    assert rope.reads == ()  # cos/sin and q/k arrive as arguments
    assert rope.form.startswith("real, interleaved pairs")


def test_flux_adaln_classes_and_the_continuous_norms_scale_then_shift_order():
    names = {i.display_name for i in located("flux")[0]["adaln"] if i.kind == "class"}
    assert names == {"normalization.AdaLayerNormZero", "normalization.AdaLayerNormZeroSingle",
                     "normalization.AdaLayerNormContinuous"}
    assert impl("flux", "adaln", "normalization.AdaLayerNormContinuous").order == "scale, shift"
    assert impl("flux", "adaln", "normalization.AdaLayerNormZero").order == "shift, scale"
    zero = impl("flux", "adaln", "normalization.AdaLayerNormZero")
    assert zero.form == "layer_norm(x) * (1 + chunk(6)[1]) + chunk(6)[0]"
    inline = impl("flux", "adaln", "transformer_flux.FluxTransformerBlock.forward (inline)")
    assert inline.kind == "inline" and inline.scope == "model-local" and inline.lines


def test_qwenimage_rope_is_complex_valued():
    rope = impl("qwenimage", "rope", "transformer_qwenimage.apply_rotary_emb_qwen")
    assert {"viewascomplex", "viewasreal"} <= rope.ops
    assert rope.form.startswith("complex")
    assert rope.scope == "model-local"


def test_wan_rope_is_model_local():
    (rope,) = located("wan")[0]["rope"]
    assert rope.scope == "model-local"
    assert rope.qualified_name == ("diffusers.models.transformers.transformer_wan."
                                   "WanAttnProcessor.__call__.<locals>.apply_rotary_emb")
    assert rope.form.startswith("real, strided writes")


def test_sd3_has_no_rope():
    assert located("sd3")[0]["rope"] == []


@pytest.mark.parametrize("model, table", [
    ("wan", "blocks.0.scale_shift_table"),
    ("skyreels_v2", "blocks.0.scale_shift_table"),
    ("ltx", "transformer_blocks.0.scale_shift_table"),
    ("pixart", "transformer_blocks.0.scale_shift_table"),
    ("sana", "transformer_blocks.0.scale_shift_table"),
])
def test_scale_shift_table_modulation_is_found_with_the_table_as_a_module_attribute(model, table):
    owners = [i for i in located(model)[0]["adaln"] if any(r.tensor == table for r in i.reads)]
    assert len(owners) == 1, [i.display_name for i in located(model)[0]["adaln"]]
    (owner,) = owners
    assert "reads scale_shift_table" in owner.matched_by
    assert "modulation x * (1 + scale) + shift" in owner.matched_by
    assert owner.order == "shift, scale"


def test_handwritten_model_file_finds_its_own_rmsnorm_by_name_and_by_its_ops():
    found = {i.display_name: i for i in located(f"{HANDWRITTEN}:build")[0]["rmsnorm"]}
    assert set(found) == {"handwritten_model.MyRMSNorm", "handwritten_model.ScaleNorm"}
    assert found["handwritten_model.MyRMSNorm"].scope == "model-local"
    assert found["handwritten_model.ScaleNorm"].matched_by == ("ops mean+pow+rsqrt without layernorm/sub/var/varmean",)
    assert [r.tensor for r in found["handwritten_model.ScaleNorm"].reads] == ["k_norm.gain"]


def test_handwritten_model_rope_modulation_and_gelu():
    found = located(f"{HANDWRITTEN}:build")[0]
    (rope,) = found["rope"]
    assert rope.display_name == "handwritten_model.rotate_with_freqs" and rope.kind == "function"
    (adaln,) = found["adaln"]
    assert adaln.kind == "inline" and adaln.order == "shift, scale"  # shift, scale = ....chunk(2)
    assert adaln.form == "layer_norm(x) * (1 + chunk(2)[1]) + chunk(2)[0]"
    (gelu,) = found["gelu"]
    assert gelu.form == "GELU, tanh approximation"


def test_diffusers_rmsnorm_takes_its_npu_branch_only_when_the_process_looks_like_an_npu_host():
    from sdcompile.core.npu.device import current

    qwen = impl("qwenimage", "rmsnorm", "normalization.RMSNorm")
    ltx_plain = impl("ltx", "rmsnorm", "normalization.RMSNorm")  # norm1/norm2 have no weight
    if current().model_sees_npu:
        assert qwen.npu_calls == ("npu_rms_norm",)
        assert qwen.form.startswith("torch_npu.npu_rms_norm")
    else:
        assert qwen.npu_calls == () and qwen.form.startswith("manual chain")
    assert ltx_plain.npu_calls == () and ltx_plain.form.startswith("manual chain")


def test_trace_records_the_lines_the_forward_ran():
    rms = impl("flux", "rmsnorm", "torch.nn.RMSNorm")
    _located, trace = located("flux")
    ran = set().union(*(trace.lines.get(c, ()) for c in rms.codes))
    forward = rms.obj.forward.__code__
    assert forward.co_firstlineno in ran
    assert any(line > forward.co_firstlineno for line in ran)
