"""How many times each primitive ran at each site in one forward (SiteUse.calls): runs of a function (q's and k's
RoPE are two), modulations computed in inline code or by one class (not the reads of the table they come from),
module calls of a class."""

from __future__ import annotations

import pytest

from sdcompile.core.zoo.locate import locate
from sdcompile.core.zoo.models import build_model, resolve_model
from sdcompile.core.zoo.runtrace import trace_forward


def _counts(spec, op: str) -> dict[str, dict[str, int]]:
    built = build_model(spec, "fp32")
    trace = trace_forward(built.module, built.inputs)
    return {impl.display_name: {s.path: s.calls for s in impl.sites}
            for impl in locate(trace, type(built.module), (op,))[op]}


ZOO = [
    # Flux's attention processors call the shared apply_rotary_emb on q and on k
    ("flux", "rope", "embeddings.apply_rotary_emb", {"transformer_blocks.0.attn": 2,
                                                     "single_transformer_blocks.0.attn": 2}),
    # Wan's RoPE is a function nested in its attention processor, also run for q and k
    ("wan", "rope", "transformer_wan.WanAttnProcessor.__call__.<locals>.apply_rotary_emb", {"blocks.0.attn1": 2}),
    # a Wan block modulates twice (before attention and before the FFN) from its scale_shift_table; the model once
    ("wan", "adaln", "transformer_wan.WanTransformerBlock.forward (inline)", {"blocks.0": 2}),
    ("wan", "adaln", "transformer_wan.WanTransformer3DModel.forward (inline)", {"": 1}),
    # Flux's double block modulates each of its two streams before their feed-forward, inline
    ("flux", "adaln", "transformer_flux.FluxTransformerBlock.forward (inline)", {"transformer_blocks.0": 2}),
    ("flux", "adaln", "normalization.AdaLayerNormZero", {"transformer_blocks.0.norm1": 1,
                                                         "transformer_blocks.0.norm1_context": 1}),
    ("hunyuanvideo", "rope", "embeddings.apply_rotary_emb", {"transformer_blocks.0.attn": 2,
                                                            "single_transformer_blocks.0.attn": 2}),
]


@pytest.mark.parametrize(("model", "op", "impl", "expected"), ZOO, ids=[f"{m}-{o}-{i}" for m, o, i, _ in ZOO])
def test_zoo_site_counts(model, op, impl, expected):
    counts = _counts(resolve_model(model), op)
    assert counts[impl] == expected, counts


def test_helpers_that_build_positions_or_tables_are_not_rope_sites():
    # LTX 2's RoPE module prepares its audio coordinates (arange, stack, sub, mul, add) and builds cos and sin: no
    # rotation; the rotation is the function the four attentions call on q and k
    counts = _counts(resolve_model("ltx2"), "rope")
    assert counts == {"transformer_ltx2.apply_interleaved_rotary_emb": {
        f"transformer_blocks.0.{attn}": 2 for attn in ("attn1", "audio_attn1", "audio_to_video_attn",
                                                        "video_to_audio_attn")}}, counts


def test_one_class_computing_two_modulations_per_call_counts_two():
    # CogView4's AdaLayerNormZero modulates the image and the text stream in one call
    counts = _counts(resolve_model("CogView4Transformer2DModel"), "adaln")
    assert counts["transformer_cogview4.CogView4AdaLayerNormZero"] == {"transformer_blocks.0.norm1": 2}, counts


NESTED = '''
import torch


class Attention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.to_q = torch.nn.Linear(8, 8)
        self.to_k = torch.nn.Linear(8, 8)

    def forward(self, x, cos, sin):
        def rotary(t):  # nested, as Wan's: x * cos + rotate_half(x) * sin
            first, second = t.chunk(2, dim=-1)
            return t * cos + torch.cat((-second, first), dim=-1) * sin

        return rotary(self.to_q(x)) + rotary(self.to_k(x))


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList([Attention(), Attention()])

    def forward(self, x, cos, sin):
        for block in self.blocks:
            x = block(x, cos, sin)
        return x


def build():
    angles = torch.arange(4)[None, :] * torch.arange(16)[:, None] / 16.0
    cos, sin = torch.cat([angles.cos()] * 2, -1), torch.cat([angles.sin()] * 2, -1)
    return Model(), {"x": torch.randn(1, 16, 8), "cos": cos, "sin": sin}
'''


def test_a_nested_function_counts_each_run_at_each_site(tmp_path):
    (tmp_path / "nested.py").write_text(NESTED)
    counts = _counts(resolve_model(model_file=f"{tmp_path / 'nested.py'}:build"), "rope")
    (impl,) = counts
    assert impl.endswith("Attention.forward.<locals>.rotary") and counts[impl] == {"blocks.0": 2, "blocks.1": 2}


def test_zoo_rmsnorm_and_gelu_site_counts():
    # Flux's q/k norms of its double block (image and text stream) and of its single block; its three tanh GELUs
    assert _counts(resolve_model("flux"), "rmsnorm") == {"torch.nn.RMSNorm": {
        f"transformer_blocks.0.attn.{n}": 1 for n in ("norm_q", "norm_k", "norm_added_q", "norm_added_k")} | {
        "single_transformer_blocks.0.attn.norm_q": 1, "single_transformer_blocks.0.attn.norm_k": 1}}
    gelu = _counts(resolve_model("flux"), "gelu")
    assert sum(n for sites in gelu.values() for n in sites.values()) == 3, gelu
    # Wan normalises q and k across heads in its self- and cross-attention
    assert _counts(resolve_model("wan"), "rmsnorm") == {"torch.nn.RMSNorm": {
        f"blocks.0.{attn}.{n}": 1 for attn in ("attn1", "attn2") for n in ("norm_q", "norm_k")}}


HELPER = '''
import torch


def _rotate_half(x):  # the helper the RoPE function calls: part of it, not a second site
    first, second = x.chunk(2, dim=-1)
    return torch.cat((-second, first), dim=-1)


def apply_rope(x, cos, sin):
    return x * cos + _rotate_half(x) * sin


class Attention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.to_q = torch.nn.Linear(8, 8)
        self.to_k = torch.nn.Linear(8, 8)

    def forward(self, x, cos, sin):
        return apply_rope(self.to_q(x), cos, sin) + apply_rope(self.to_k(x), cos, sin)


class Modulation(torch.nn.Module):  # produces shift and scale from the conditioning; the block applies them
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 16)

    def forward(self, emb):
        return self.linear(torch.nn.functional.silu(emb)).chunk(2, dim=-1)


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = Attention()
        self.norm = torch.nn.LayerNorm(8, elementwise_affine=False)
        self.modulation = Modulation()

    def forward(self, x, emb, cos, sin):
        shift, scale = self.modulation(emb)
        x = self.norm(x) * (1 + scale[:, None]) + shift[:, None]
        return self.attn(x, cos, sin)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList([Block(), Block()])

    def forward(self, x, emb, cos, sin):
        for block in self.blocks:
            x = block(x, emb, cos, sin)
        return x


def build():
    angles = torch.arange(4)[None, :] * torch.arange(16)[:, None] / 16.0
    cos, sin = torch.cat([angles.cos()] * 2, -1), torch.cat([angles.sin()] * 2, -1)
    return Model(), {"x": torch.randn(1, 16, 8), "emb": torch.randn(1, 8), "cos": cos, "sin": sin}
'''


def test_a_helper_called_by_the_rope_function_is_part_of_its_site_and_a_producer_is_not_a_site(tmp_path):
    from sdcompile.phases.analyze.phase import analyze

    (tmp_path / "helper.py").write_text(HELPER)
    spec = resolve_model(model_file=f"{tmp_path / 'helper.py'}:build")
    rope = _counts(spec, "rope")
    assert rope == {"helper.apply_rope": {"blocks.0.attn": 2, "blocks.1.attn": 2}}, rope  # q and k, one function
    result = analyze(model_file=f"{tmp_path / 'helper.py'}:build", op="adaln", workdir=tmp_path / "ws")
    (report,) = result.ops
    impls = {i.name: i for i in report.implementations}
    assert impls["helper.Modulation"].producer_only and impls["helper.Modulation"].site_count == 2
    (inline,) = [i for i in report.implementations if not i.producer_only]
    assert inline.site_count == 2 and report.site_count == 2  # the two blocks' modulations; not the producer's


def test_a_modulation_of_what_no_norm_produced_is_not_a_site():
    # AuraFlow's final block computes x * (1 + scale) + shift on the last block's output: nothing normalised it, so
    # no fused AdaLN computes it (its blocks' own AdaLayerNormZero and inline modulations still count)
    counts = _counts(resolve_model("AuraFlowTransformer2DModel"), "adaln")
    assert "auraflow_transformer_2d.AuraFlowPreFinalBlock.forward (inline)" not in counts, counts
    assert counts["normalization.AdaLayerNormZero"] == {"joint_transformer_blocks.0.norm1": 1,
                                                        "joint_transformer_blocks.0.norm1_context": 1,
                                                        "single_transformer_blocks.0.norm1": 1}, counts
    assert counts["auraflow_transformer_2d.AuraFlowSingleTransformerBlock.forward (inline)"] == {
        "single_transformer_blocks.0": 1}, counts
