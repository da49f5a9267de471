"""The model zoo and --model-file: every zoo model builds tiny and runs; names, aliases and errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from sdcompile.core.zoo.inputs import flat_tensors
from sdcompile.core.zoo.models import build_model, parse_dtype, resolve_model, zoo_entries
from sdcompile.util.errors import BadInput

HANDWRITTEN = Path(__file__).resolve().parents[1] / "analyze" / "data" / "handwritten_model.py"
REQUIRED = ("flux", "sd3", "wan", "hunyuanvideo", "qwenimage", "cogvideox", "ltx", "pixart", "sana", "flux2",
            "chroma", "skyreels_v2", "minimax_h3")


def test_zoo_has_the_required_models():
    assert set(REQUIRED) <= set(zoo_entries())


@pytest.mark.parametrize("name", list(zoo_entries()))
def test_every_zoo_model_builds_tiny_in_bf16_and_runs_one_forward(name):
    built = build_model(name, "bf16")  # its cost: benchmarks/zoo_build.py
    assert not built.module.training
    for pname, p in list(built.module.named_parameters()) + list(built.module.named_buffers()):
        if p.is_floating_point() and pname not in built.kept_fp32:
            assert p.dtype == torch.bfloat16, pname
    for kw, tensor in flat_tensors(built.inputs, "inputs"):
        if tensor.is_floating_point():
            assert tensor.dtype == torch.bfloat16, kw
    assert sum(p.numel() for p in built.module.parameters()) < 5_000_000
    with torch.no_grad():
        out = built.module(**built.inputs)
    first = out[0] if isinstance(out, (tuple, list)) else out.sample
    first = first[0] if isinstance(first, (list, tuple)) else first
    assert torch.isfinite(first.float()).all()


def test_keep_in_fp32_modules_stay_fp32_like_from_pretrained():
    built = build_model("wan", "fp16")
    kept = dict(built.module.named_parameters())
    assert "blocks.0.scale_shift_table" in built.kept_fp32
    assert kept["blocks.0.scale_shift_table"].dtype == torch.float32
    assert kept["blocks.0.attn1.to_q.weight"].dtype == torch.float16


def test_builds_are_seeded_and_identical():
    a, b = build_model("flux", "fp32"), build_model("flux", "fp32")
    for (name, p), (_, q) in zip(a.module.named_parameters(), b.module.named_parameters(), strict=True):
        assert torch.equal(p, q), name
    assert torch.equal(a.inputs["hidden_states"], b.inputs["hidden_states"])


@pytest.mark.parametrize("alias", ["FluxTransformer2DModel", "fluxtransformer2dmodel", "FLUX", "flux"])
def test_class_name_and_case_are_aliases(alias):
    assert resolve_model(alias).name == "flux"


def test_skyreels_accepts_hyphen():
    assert resolve_model("skyreels-v2").name == "skyreels_v2"


def test_unknown_model_lists_the_known_ones():
    with pytest.raises(BadInput) as err:
        resolve_model("stable-cascade")
    assert err.value.exit_code == 2
    for name in REQUIRED:
        assert name in err.value.one_line()  # the choices are in its fix


def test_model_and_model_file_are_exclusive_and_one_is_required():
    with pytest.raises(BadInput):
        resolve_model("flux", f"{HANDWRITTEN}:build")
    with pytest.raises(BadInput):
        resolve_model()


def test_model_file_builds_the_users_module_with_its_inputs_in_dtype():
    built = build_model(resolve_model(model_file=f"{HANDWRITTEN}:build"), "fp16")
    assert built.name == "handwritten_model-build"
    assert type(built.module).__name__ == "Block"
    assert built.inputs["hidden_states"].dtype == torch.float16
    assert built.module.q_norm.weight.dtype == torch.float16
    with torch.no_grad():
        assert built.module(**built.inputs).shape == (1, 8, 32)


@pytest.mark.parametrize(
    "arg, fragment",
    [
        ("nowhere.py:build", "does not exist"),
        (f"{HANDWRITTEN}", "is not path.py:factory"),
        (f"{HANDWRITTEN}:missing", "has no function 'missing'"),
        (f"{HANDWRITTEN}:not_a_pair", "must return (module, kwargs)"),
    ],
)
def test_model_file_errors_are_bad_input(arg, fragment):
    with pytest.raises(BadInput) as err:
        build_model(resolve_model(model_file=arg))
    assert fragment in err.value.message


@pytest.mark.parametrize("text, expected", [("bf16", "bf16"), ("bfloat16", "bf16"), ("FP16", "fp16"),
                                            ("half", "fp16"), ("fp32", "fp32"), ("float32", "fp32")])
def test_dtype_names(text, expected):
    assert parse_dtype(text) == expected


def test_unknown_dtype_is_bad_input():
    with pytest.raises(BadInput):
        parse_dtype("int8")
