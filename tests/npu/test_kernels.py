"""The emulated fused ops: numerics against independent references, and the op contract (schema, fake kernel)."""

import pytest
import torch
import torch.nn.functional as F

from sdcompile.core.npu.emulation.ops import fused_op_table, registered_ops

OPS = {op.name: op for op in fused_op_table() if op.emulated}
TARGET_OPS = {op.name: op for op in fused_op_table() if not op.emulated}  # the tree's layer files define these


def _op(name):
    ns, op = name.split("::")
    return getattr(getattr(torch.ops, ns), op)


def _cos(a, b):
    return F.cosine_similarity(a.float().flatten(), b.float().flatten(), dim=0).item()


def test_every_emulated_catalog_op_is_registered_as_a_custom_op():
    assert set(registered_ops()) == set(OPS)
    for name in OPS:
        packet = _op(name)
        assert packet.default._schema.name == name  # the real namespace, e.g. npu::npu_rms_norm


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_rms_norm_matches_the_fp32_formula_and_returns_rstd(dtype):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 5, 3, 16, generator=g).to(dtype)
    gamma = torch.randn(16, generator=g).to(dtype)
    y, rstd = torch.ops.npu.npu_rms_norm(x, gamma, epsilon=1e-6)
    xf = x.double()
    ref_rstd = 1 / torch.sqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)
    ref = xf * ref_rstd * gamma.double()
    assert y.dtype == dtype and y.shape == x.shape
    assert rstd.dtype == torch.float32 and rstd.shape == (2, 5, 3, 1)
    tol = 1e-5 if dtype == torch.float32 else 1e-2
    torch.testing.assert_close(y.double(), ref, rtol=tol, atol=tol)
    torch.testing.assert_close(rstd.double(), ref_rstd, rtol=1e-5, atol=1e-6)


def test_fast_gelu_is_the_sigmoid_form_not_the_tanh_gelu_it_replaces():
    x = torch.linspace(-6, 6, 1001)
    y = torch.ops.npu.npu_fast_gelu(x)
    torch.testing.assert_close(y, x * torch.sigmoid(1.702 * x), rtol=1e-5, atol=1e-6)
    tanh_gelu = F.gelu(x, approximate="tanh")
    assert (y - tanh_gelu).abs().max().item() > 1e-2  # a real numerical difference the NPU shows too


def test_rotary_interleave_is_a_complex_rotation_of_pairs():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(1, 4, 2, 8, generator=g)
    theta = torch.randn(1, 4, 1, 4, generator=g)
    cos = theta.cos().repeat_interleave(2, -1)
    sin = theta.sin().repeat_interleave(2, -1)
    out = torch.ops.npu.npu_rotary_mul(x, cos, sin, "interleave")
    rotation = torch.polar(torch.ones_like(theta), theta)
    ref = torch.view_as_real(torch.view_as_complex(x.reshape(1, 4, 2, 4, 2)) * rotation)
    torch.testing.assert_close(out, ref.flatten(-2), rtol=1e-5, atol=1e-5)


def test_rotary_half_rotates_the_two_halves():
    g = torch.Generator().manual_seed(2)
    x = torch.randn(1, 3, 2, 8, generator=g)
    theta = torch.randn(1, 3, 1, 4, generator=g)
    cos, sin = torch.cat([theta.cos()] * 2, -1), torch.cat([theta.sin()] * 2, -1)
    out = torch.ops.npu.npu_rotary_mul(x, cos, sin)  # default mode "half"
    x1, x2 = x[..., :4], x[..., 4:]
    ref = torch.cat([x1 * theta.cos() - x2 * theta.sin(), x2 * theta.cos() + x1 * theta.sin()], -1)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="rotary_mode"):
        torch.ops.npu.npu_rotary_mul(x, cos, sin, "sideways")


@pytest.mark.parametrize("layout", ["BSND", "BNSD", "BSH", "SBH"])
def test_fusion_attention_matches_sdpa_in_every_layout(layout):
    g = torch.Generator().manual_seed(3)
    b, n, s, d = 2, 3, 5, 8
    q, k, v = (torch.randn(b, n, s, d, generator=g) for _ in range(3))
    mask = torch.rand(b, 1, s, s, generator=g) > 0.7  # True = do not attend
    mask[..., 0] = False  # every row keeps one key
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=~mask, scale=0.3)

    def to(t):
        return {"BNSD": t, "BSND": t.transpose(1, 2), "BSH": t.transpose(1, 2).reshape(b, s, n * d),
                "SBH": t.permute(2, 0, 1, 3).reshape(s, b, n * d)}[layout]

    out, smax, ssum, *_rest = torch.ops.npu.npu_fusion_attention(to(q), to(k), to(v), n, layout, atten_mask=mask,
                                                                scale=0.3)
    torch.testing.assert_close(out, to(ref), rtol=1e-5, atol=1e-5)
    assert smax.shape == (b, n, s, 8) and ssum.shape == (b, n, s, 8)


def test_fusion_attention_token_band():
    g = torch.Generator().manual_seed(4)
    q, k, v = (torch.randn(1, 1, 6, 4, generator=g) for _ in range(3))
    out = torch.ops.npu.npu_fusion_attention(q, k, v, 1, "BNSD", scale=0.5, pre_tockens=6, next_tockens=0)[0]
    causal = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.5)
    torch.testing.assert_close(out, causal, rtol=1e-5, atol=1e-5)


def test_geglu_uses_the_right_half_as_gate_with_tanh_gelu():
    x = torch.randn(2, 3, 10, generator=torch.Generator().manual_seed(5))
    y, act = torch.ops.npu.npu_geglu(x, dim=-1, approximate=1)
    a, b = x.chunk(2, -1)
    torch.testing.assert_close(y, a * F.gelu(b, approximate="tanh"))
    torch.testing.assert_close(act, F.gelu(b, approximate="tanh"))


def test_adaln_is_layernorm_then_modulation_for_both_scale_layouts():
    g = torch.Generator().manual_seed(6)
    x = torch.randn(2, 7, 16, generator=g)
    scale, shift = torch.randn(2, 16, generator=g), torch.randn(2, 16, generator=g)
    weight, bias = torch.randn(16, generator=g), torch.randn(16, generator=g)
    ref = F.layer_norm(x, (16,), weight, bias, 1e-6) * (1 + scale[:, None]) + shift[:, None]
    torch.testing.assert_close(torch.ops.mindiesd.adaln(x, scale, shift, weight, bias, 1e-6), ref,
                               rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(torch.ops.mindiesd.adaln(x, scale[:, None], shift[:, None], weight, bias, 1e-6), ref,
                               rtol=1e-5, atol=1e-5)
    out, mean, rstd = torch.ops.mindiesd.adaln_v2(x, scale, shift, None, None, 1e-6)
    torch.testing.assert_close(mean, x.mean(-1, keepdim=True), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(rstd, 1 / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + 1e-6), rtol=1e-5,
                               atol=1e-5)


def test_ops_the_target_defines_are_left_to_its_layer_files():
    # the tree registers them with its own torch fallbacks (tests/verify/test_loader.py runs them)
    assert sorted(op.op_name for op in TARGET_OPS.values()) == [
        "gather_residual_gate", "gather_scale_shift", "muls_add", "residual_gate_add", "scale_shift", "swiglu"]
    for op in TARGET_OPS.values():
        assert op.registered_by.startswith("mindiesd/layers/") and not op.kernel and not op.fake, op.name
        assert op.name not in registered_ops()


def test_bf16_results_are_rounded_once():
    # A fused kernel rounds once; the eager bf16 chain rounds after every op. Both are close, not identical.
    x = torch.randn(4, 256, generator=torch.Generator().manual_seed(8)).bfloat16()
    w = torch.ones(256, dtype=torch.bfloat16)
    fused = torch.ops.npu.npu_rms_norm(x, w)[0]
    exact = (x.double() * torch.rsqrt(x.double().pow(2).mean(-1, keepdim=True) + 1e-6)).bfloat16()
    assert torch.equal(fused, exact)


EXAMPLES = {
    "npu::npu_rms_norm": lambda: (torch.randn(2, 3, 8), torch.randn(8)),
    "npu::npu_fast_gelu": lambda: (torch.randn(2, 3),),
    "npu::npu_rotary_mul": lambda: (torch.randn(1, 2, 2, 8), torch.randn(1, 2, 1, 8), torch.randn(1, 2, 1, 8)),
    "npu::npu_geglu": lambda: (torch.randn(2, 8),),
    "npu::npu_fusion_attention": lambda: (torch.randn(1, 4, 2, 8), torch.randn(1, 4, 2, 8), torch.randn(1, 4, 2, 8),
                                          2, "BSND"),
    "npu::npu_dtype_cast": lambda: (torch.randn(3), torch.bfloat16),
    "npu::_npu_dtype_cast": lambda: (torch.randn(3), torch.float16),
    "mindiesd::adaln": lambda: (torch.randn(2, 3, 8), torch.randn(2, 8), torch.randn(2, 8)),
    "mindiesd::adaln_v2": lambda: (torch.randn(2, 3, 8), torch.randn(2, 8), torch.randn(2, 8)),
}


def test_every_catalog_op_has_an_example_here():
    assert set(EXAMPLES) == set(OPS)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_fake_kernel_agrees_with_the_cpu_kernel(name):
    # torch's own checker: schema, and fake-tensor outputs (shape, dtype, strides) against the real kernel.
    torch.library.opcheck(_op(name).default, EXAMPLES[name](), test_utils=("test_schema", "test_faketensor"))


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_each_op_traces_as_one_opaque_node(name):
    from torch.fx.experimental.proxy_tensor import make_fx

    args = EXAMPLES[name]()
    gm = make_fx(lambda *a: _op(name)(*a), tracing_mode="fake")(*args)
    calls = [n for n in gm.graph.nodes if n.op == "call_function" and "getitem" not in str(n.target)]
    assert [str(n.target) for n in calls] == [OPS[name].target]


def test_catalog_entries_are_documented():
    for op in (*OPS.values(), *TARGET_OPS.values()):
        assert op.used_by and op.semantics and op.npu_kernels, op.name
