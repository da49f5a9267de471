"""The emulated torch_npu is the one paired with the installed torch, with that release's behaviour set."""

from importlib import metadata

import pytest
import torch
from npu_processes import run_python

from sdcompile.core.npu.device import process_torch_npu_version
from sdcompile.core.npu.emulation.behaviours import NpuBehaviour, behaviours, emulated_torch_npu_version, in_range

CAST_KEYS = {"to-dtype-is-npu-dtype-cast", "to-dtype-is-_npu_dtype_cast"}
TORCH_RELEASE = tuple(int(p) for p in metadata.version("torch").split("+")[0].split(".")[:2])


@pytest.mark.parametrize(("torch_npu", "applying"), [
    ("2.6.0", {"to-dtype-is-npu-dtype-cast"}),  # MindIE-SD's patterns: `"2.6.0" in torch.__version__`
    ("2.7.1", {"to-dtype-is-_npu_dtype_cast"}),
    ("2.8.0+sdcompile.emulated", {"to-dtype-is-_npu_dtype_cast"}),
    ("2.9.0", set()),  # MR 30358 removed the Tensor.to over-adaptation
    ("2.13.0.post1", set()),
    (None, set()),  # no torch_npu at all (plain-cpu)
])
def test_the_behaviour_set_follows_the_torch_npu_release(torch_npu, applying):
    found = behaviours(torch_npu)
    assert {b.key for b in found} == CAST_KEYS
    assert {b.key for b in found if b.applies} == applying
    for b in found:
        assert isinstance(b, NpuBehaviour) and b.seen and b.torch_npu_range
        assert b.effect == (b.applies_text if b.applies else b.otherwise_text)


@pytest.mark.parametrize(("torch_version", "expected"), [
    ("2.7.1", "2.7.1+sdcompile.emulated"), ("2.9.0+cu128", "2.9.0+sdcompile.emulated"),
    ("2.13.0+cpu", "2.13.0+sdcompile.emulated"),
])
def test_the_emulated_torch_npu_pairs_with_torch(torch_version, expected):
    assert emulated_torch_npu_version(torch_version) == expected


def test_ranges_compare_releases():
    assert in_range("2.8.9", ">=2.7,<2.9") and not in_range("2.9.0", ">=2.7,<2.9")
    assert in_range("2.6.0", "<2.7") and not in_range("2.7", "<2.7")


def test_this_process_has_the_set_of_the_installed_torch():
    # the emulated device is active (tests/conftest.py), paired with the running torch
    applying = {b.key for b in behaviours(process_torch_npu_version()) if b.applies}
    assert applying == ({"to-dtype-is-_npu_dtype_cast"} if TORCH_RELEASE < (2, 9) else set())


def _traced_casts(fn, *args) -> list[str]:
    from torch.fx.experimental.proxy_tensor import make_fx

    gm = make_fx(fn, tracing_mode="fake")(*args)
    return [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]


def test_tensor_to_dtype_traces_as_the_installed_torch_npu_makes_it():
    """The real effect on the running torch: what a model's `x.to(torch.float32)` traces to here."""
    cast = "npu._npu_dtype_cast.default" if TORCH_RELEASE < (2, 9) else "aten._to_copy.default"
    assert _traced_casts(lambda x: x.to(torch.float32), torch.randn(2, 4, dtype=torch.bfloat16)) == [cast]


@pytest.mark.parametrize(("torch_npu", "cast"), [
    ("2.6.0", "npu.npu_dtype_cast.default"), ("2.8.0", "npu._npu_dtype_cast.default"),
    ("2.9.0", "aten._to_copy.default"),
])
def test_each_behaviour_set_dispatches_model_casts_through_torch(torch_npu, cast):
    """The mechanism under another release's set, in a fresh process: eager results, make_fx and torch.compile's
    AOT graph all go through the emulated op (an aten kernel on CPU tensors, as torch_npu's was on NPU ones)."""
    proc = run_python(f"""
        import torch
        from torch.fx.experimental.proxy_tensor import make_fx
        from sdcompile.core.npu.emulation import behaviours, install_fused_ops
        install_fused_ops(("npu",))  # no device activation: it would install the running torch's set first
        behaviours.install(behaviours.behaviours({torch_npu!r}))

        def rms(x, w):
            h = x.to(torch.float32)
            return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6) * w

        x, w = torch.randn(2, 8, dtype=torch.bfloat16), torch.randn(8)
        seen = []
        def backend(gm, inputs):
            from sdcompile.core.torchcompat import dynamo
            def fw(g, i):
                seen.extend(t for t in map(str, (n.target for n in g.graph.nodes)) if "cast" in t or "_to_copy" in t)
                return g
            return dynamo.aot_autograd(fw_compiler=fw)(gm, inputs)
        with torch.no_grad():
            out = torch.compile(rms, backend=backend)(x, w)
        ref = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6) * w
        assert torch.equal(out, ref), (out, ref)
        assert x.to(torch.bfloat16) is x  # a no-op cast stays a no-op
        graph = make_fx(lambda t: t.to(torch.float32), tracing_mode="fake")(x)
        print(" ".join(seen), [str(n.target) for n in graph.graph.nodes if n.op == "call_function"])
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[0] == cast and f"['{cast}']" in proc.stdout, proc.stdout


def test_plain_cpu_tensors_keep_torchs_cast():
    proc = run_python("""
        import torch
        from sdcompile.core.npu.device import activate
        from sdcompile.core.npu.device import activate, process_torch_npu_version
        from sdcompile.core.npu.emulation import behaviours
        activate("plain-cpu")
        print(behaviours.installed(), [b.applies for b in behaviours.behaviours(process_torch_npu_version())])
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "{} [False, False]"
