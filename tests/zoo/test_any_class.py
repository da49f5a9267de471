"""`--model <a diffusers class the zoo does not list>`: its default config shrunk by rules over argument names, and
example inputs synthesized from its forward — tried on classes nobody wrote a factory for."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from sdcompile.core.zoo.any_class import model_name, shrink
from sdcompile.core.zoo.models import build_model, resolve_model, zoo_entries
from sdcompile.core.zoo.synthesis import attempts, plan_arguments
from sdcompile.util.errors import BadInput

# Outside the zoo, each with its own input layout: image latents with size conditioning (CogView4), packed tokens with
# 4-axis RoPE ids (Flux 3) or 3-axis ids that are optional in its forward (LongCat-Image), two text encoders with
# masks (HunyuanImage), a video latent with a control stream (Wan-VACE), ids without pooled text (Bria).
OUTSIDE_THE_ZOO = {
    "CogView4Transformer2DModel": {"original_size", "target_size", "crop_coords"},
    "Flux3Transformer2DModel": {"img_ids", "txt_ids"},
    "LongCatImageTransformer2DModel": {"img_ids", "txt_ids"},
    "HunyuanImageTransformer2DModel": {"encoder_attention_mask"},
    "WanVACETransformer3DModel": {"control_hidden_states"},
    "BriaTransformer2DModel": {"img_ids", "txt_ids"},
}


def test_the_classes_are_outside_the_zoo():
    assert not set(OUTSIDE_THE_ZOO) & {entry.class_name for entry in zoo_entries().values()}


def test_a_class_name_resolves_without_importing_diffusers():
    code = ("import sys; from sdcompile.core.zoo.models import resolve_model; "
            "s = resolve_model('CogView4Transformer2DModel'); "
            "print(s.kind, s.name, s.model_option, 'diffusers' in sys.modules, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["class", "cog_view4", "CogView4Transformer2DModel", "False", "False"]


@pytest.mark.parametrize("class_name", list(OUTSIDE_THE_ZOO))
def test_each_builds_and_runs_with_synthesized_inputs(class_name):
    built = build_model(resolve_model(class_name), "bf16")
    assert built.spec.kind == "class" and built.name == model_name(class_name)
    assert OUTSIDE_THE_ZOO[class_name] <= set(built.inputs)  # the arguments its layout needs were made
    assert any(note.startswith("inputs synthesized: hidden_states") for note in built.notes)
    constant = [n for n, p in built.module.named_parameters() if p.numel() > 1 and bool((p == p.flatten()[0]).all())]
    assert constant == []  # norm gammas and zero-initialised projections moved off their constants, as in the zoo
    with torch.no_grad():
        out = built.module(**built.inputs)
    sample = out[0] if isinstance(out, tuple) else out.sample
    assert torch.isfinite(sample.float()).all()


def test_the_tiny_size_shrinks_block_counts_and_heads_by_field_name():
    config = {"num_layers": 30, "num_single_layers": 38, "num_attention_heads": 24, "num_key_value_heads": 8,
              "vace_layers": [0, 5, 10], "attention_head_dim": 128, "patch_size": 2}
    shrunk, changed = shrink(config, ["blocks", "block_indices", "heads", "kv_heads"])
    assert shrunk == {**config, "num_layers": 1, "num_single_layers": 1, "num_attention_heads": 2,
                      "num_key_value_heads": 1, "vace_layers": [0]}
    assert "num_layers 30 -> 1" in changed and len(changed) == 5  # head dims and patch sizes stay real


def test_an_argument_no_role_can_make_names_itself_and_the_way_out():
    def forward(self, hidden_states, timestep, sigma_table):  # a model-specific table
        raise AssertionError("not called")

    with pytest.raises(BadInput, match="forward argument 'sigma_table'") as caught:
        plan_arguments(forward, {"in_channels": 4})
    assert "--inputs FILE ([inputs] sigma_table = " in caught.value.fix
    assert "--model-file model.py:build" in caught.value.fix


def test_optional_arguments_are_tried_filled_one_left_out_then_none():
    def forward(self, hidden_states, img_ids=None, guidance=None):
        raise AssertionError("not called")

    plan = plan_arguments(forward, {"in_channels": 4, "axes_dims_rope": (4, 4, 8)})
    tried = [sorted(specs) for specs in attempts(plan)]
    # all filled, img_ids left out, guidance left out, none; then the next hidden_states layout
    assert tried[:5] == [["guidance", "hidden_states", "img_ids"], ["guidance", "hidden_states"],
                         ["hidden_states", "img_ids"], ["hidden_states"], ["guidance", "hidden_states", "img_ids"]]


@pytest.mark.torch_independent  # reading the forward's signature
def test_a_class_whose_forward_cannot_be_synthesized_exits_2_naming_the_argument(cli, tmp_path):
    out = cli("analyze", "--model", "QwenImage21Transformer2DModel", "--workdir", str(tmp_path / "ws"), cwd=tmp_path)
    assert out.exit_code == 2, out.stderr
    (line,) = out.stderr.strip().splitlines()
    assert "forward argument 'img_mask'" in line and "--inputs FILE ([inputs] img_mask = " in line


def test_analyze_a_class_outside_the_zoo_records_it_under_its_snake_case_name(cli, tmp_path):
    out = cli("analyze", "--model", "CogView4Transformer2DModel", "--op", "adaln", "--json", "--workdir",
              str(tmp_path / "ws"), cwd=tmp_path)
    assert out.exit_code == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["model"] == "cog_view4" and "inputs synthesized" in result["origin"]
    (adaln,) = result["ops"]
    assert adaln["present"] and adaln["site_count"] >= 2
    notes = result["model_notes"]
    assert any(note.startswith("inputs synthesized: hidden_states randn[1, 16, 8, 8]") for note in notes), notes
    assert (tmp_path / "ws" / "cog_view4" / "adaln" / "state.json").is_file()


def test_a_misspelt_class_name_is_told_the_class_it_misspells():
    with pytest.raises(BadInput) as caught:
        resolve_model("CogView4Transformer2DMode")
    assert caught.value.fix.startswith("did you mean CogView4Transformer2DModel")
