"""RoPE written inline, with no helper a name or an op signature would find: located by what the forward computes
(core/zoo/rotation.py), counted once per rotated tensor, and not confused with other sums of a tensor's halves."""

from __future__ import annotations

import json

import pytest

from sdcompile.core.zoo.locate import locate
from sdcompile.core.zoo.models import build_model, resolve_model
from sdcompile.core.zoo.runtrace import trace_forward

MODEL = '''
import torch


def _rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rotate(q, cos, sin):
    # {form}
    {body}


class AttnProcessor:  # not a module: the rotation runs in its __call__, not in a function of its own
    def __call__(self, attn, x, cos, sin):
        q = attn.norm_q(attn.to_q(x).unflatten(-1, (2, 8)))
        k = attn.norm_k(attn.to_k(x).unflatten(-1, (2, 8)))
        v = attn.to_v(x).unflatten(-1, (2, 8))
        cos, sin = cos.unsqueeze(2), sin.unsqueeze(2)
        {inline}
        out = torch.nn.functional.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        return attn.to_out(out.transpose(1, 2).flatten(2))


class Attention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.to_q, self.to_k, self.to_v, self.to_out = (torch.nn.Linear(16, 16) for _ in range(4))
        self.norm_q, self.norm_k = torch.nn.RMSNorm(8, eps=1e-6), torch.nn.RMSNorm(8, eps=1e-6)
        self.processor = AttnProcessor()

    def forward(self, x, cos, sin):
        return self.processor(self, x, cos, sin)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList([Attention(), Attention()])

    def forward(self, x, cos, sin):
        for block in self.blocks:
            x = x + block(x, cos, sin)
        return x


def build():
    torch.manual_seed(0)
    model = Model()
    for block in model.blocks:
        torch.nn.init.uniform_(block.norm_q.weight, 0.5, 1.5)
        torch.nn.init.uniform_(block.norm_k.weight, 0.5, 1.5)
    inv_freq = 1.0 / (10000 ** (torch.arange(0, 8, 2).float() / 8))
    angles = torch.arange(32).float()[:, None] * inv_freq[None, :]
    {tables}
    return model, {{"x": torch.randn(1, 32, 16), "cos": cos[None], "sin": sin[None]}}
'''

HALVES = "cos, sin = torch.cat((angles, angles), -1).cos(), torch.cat((angles, angles), -1).sin()"
PAIRS = "cos, sin = angles.cos(), angles.sin()"

FORMS = {
    # Ideogram 4's processor: the rotated halves from a helper, the products and their sum inline
    "rotate-half": ("q = (q * cos) + (_rotate_half(q) * sin); k = (k * cos) + (_rotate_half(k) * sin)", HALVES),
    # even and odd lanes rotated pairwise and interleaved back, inline (Mochi writes this in a function)
    "pairwise": ("q = torch.stack((q[..., 0::2] * cos - q[..., 1::2] * sin, q[..., 0::2] * sin + q[..., 1::2] * cos),"
                 " -1).flatten(-2); k = torch.stack((k[..., 0::2] * cos - k[..., 1::2] * sin, k[..., 0::2] * sin + "
                 "k[..., 1::2] * cos), -1).flatten(-2)", PAIRS),
    # lanes as complex numbers times cos + i sin (Lumina's form), inline
    "complex": ("freqs = torch.complex(cos, sin); "
                "q = torch.view_as_real(torch.view_as_complex(q.unflatten(-1, (-1, 2))) * freqs).flatten(-2); "
                "k = torch.view_as_real(torch.view_as_complex(k.unflatten(-1, (-1, 2))) * freqs).flatten(-2)", PAIRS),
}


def _model(tmp_path, inline: str, tables: str, name: str = "inline") -> str:
    text = MODEL.format(form="unused here", body="return q", inline=inline, tables=tables)
    (tmp_path / f"{name}.py").write_text(text)
    return f"{tmp_path / name}.py:build"


def _rope(model_file: str) -> dict:
    built = build_model(resolve_model(model_file=model_file), "fp32")
    trace = trace_forward(built.module, built.inputs)
    return {impl.display_name: (impl.kind, impl.form, {s.path: s.calls for s in impl.sites})
            for impl in locate(trace, type(built.module), ("rope",))["rope"]}


@pytest.mark.parametrize("form", FORMS)
def test_rope_computed_inline_in_an_attention_processor_is_located_once_per_rotated_tensor(tmp_path, form):
    inline, tables = FORMS[form]
    found = _rope(_model(tmp_path, inline, tables, form.replace("-", "_")))
    name = f"{form.replace('-', '_')}.AttnProcessor.__call__ (inline)"
    assert set(found) == {name}, found
    kind, shape, sites = found[name]
    assert kind == "inline" and sites == {"blocks.0": 2, "blocks.1": 2}  # q and k in each block
    assert shape is not None and ("rotate half" in shape if form == "rotate-half" else True), shape


def test_a_weighted_sum_of_a_tensors_halves_is_not_a_rotation(tmp_path):
    # x1 * a - x2 * b once, with a and b two unrelated tensors: nothing rotates the other half
    inline = "first, second = q.chunk(2, -1); q = torch.cat((first * cos[..., :4] - second * sin[..., :4],) * 2, -1)"
    assert _rope(_model(tmp_path, inline, HALVES)) == {}


@pytest.mark.slow
def test_run_generates_and_verifies_a_replacement_for_inline_rope(cli, tmp_path):
    """Each block's inline code rotates q and k: one replacement each, generated, registered, verified against the
    target's NPU kernel and matched at every site."""
    inline, tables = FORMS["rotate-half"]
    out = cli("run", "--model-file", _model(tmp_path, inline, tables), "--name", "inl", "--op", "rope", "--json",
              cwd=tmp_path)
    assert out.exit_code == 0, out.stdout[-3000:] + out.stderr[-3000:]
    summaries = {p["phase"]: p["summary"] for p in json.loads(out.stdout)["phases"]}
    assert "4 site(s) get a generated replacement" in summaries["scaffold"], summaries
    assert "inline-build: 4 replacement(s)" in summaries["verify"], summaries
