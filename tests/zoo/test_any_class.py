"""`--model <a diffusers class the zoo does not list>`: its default config shrunk by rules over argument names, and
example inputs synthesized from its forward — tried on classes nobody wrote a factory for."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib

import pytest
import torch

from sdcompile.core.zoo.any_class import constructor_defaults, model_class, model_name, shrink
from sdcompile.core.zoo.inputs import materialize
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


def test_an_argument_no_role_names_is_made_as_its_docstring_and_its_forward_use_say():
    def forward(self, hidden_states, timestep, segment_ids, keep, sigma_table):
        """
        Args:
            hidden_states (`torch.Tensor` of shape `(batch_size, sequence_length, in_channels)`):
                a packed sequence
            segment_ids (`torch.Tensor` of shape `(batch_size, sequence_length)`):
                the sample each token belongs to
        """
        same_sample = segment_ids.unsqueeze(2) == segment_ids.unsqueeze(1)  # compared: ids
        hidden_states = hidden_states.masked_fill(~keep[..., None], 0.0)  # inverted: a mask
        return hidden_states * sigma_table, same_sample  # a model-specific table: values

    plan = {a.name: a for a in plan_arguments(forward, {"in_channels": 4})}
    assert not plan["hidden_states"].learned and plan["segment_ids"].learned
    assert plan["segment_ids"].candidates[0] == {"zeros": [1, 16], "dtype": "long"}  # its documented shape first
    assert plan["keep"].candidates[0] == {"ones": [1, 16], "dtype": "bool"}
    assert plan["sigma_table"].candidates[0] == {"randn": [1, 16], "seed": 11}
    first = next(attempts(list(plan.values())))
    # with arguments learned, every argument at its documented shape first: one sequence length for all
    assert first["hidden_states"]["randn"] == [1, 16, 4] and first["segment_ids"]["zeros"] == [1, 16]


def test_the_docstring_s_shapes_are_the_last_try_when_every_role_is_named_and_every_layout_failed():
    def forward(self, hidden_states, encoder_hidden_states, encoder_attention_mask=None):
        """
        Args:
            hidden_states (`torch.Tensor` of shape `(batch_size, in_channels, height, width)`):
                latents
            encoder_hidden_states (`torch.Tensor` of shape `(batch_size, 1 + len(injection_layer_ids), text_len,
                cap_feat_dim)`): one bundle of text features for the first block and per injection block
        """
        raise AssertionError("not called")

    # BriaFibo2's documentation: a dimension with a call of its own, read whole; its value from the config
    config = {"in_channels": 4, "cap_feat_dim": 24, "injection_layer_ids": (1, 3)}
    plan = {a.name: a for a in plan_arguments(forward, config)}
    assert plan["encoder_hidden_states"].documented["randn"] == [1, 3, 8, 24]
    tried = list(attempts(list(plan.values())))
    assert tried[0]["encoder_hidden_states"] == plan["encoder_hidden_states"].candidates[0]  # the catalog's first
    last = tried[-1]
    assert last["encoder_hidden_states"]["randn"] == [1, 3, 8, 24] and len(last["hidden_states"]["randn"]) == 4


def test_latent_channels_under_another_name_are_read_from_the_layers_they_pass_through():
    import torch

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj_in, self.proj_out = torch.nn.Linear(12, 64), torch.nn.Linear(64, 12)
            self.context = torch.nn.Linear(24, 64)

        def forward(self, hidden_states):
            raise AssertionError("not called")

    config = {"acoustic_width": 12, "model_width": 64, "text_width": 24, "depth": 1}
    (plan,) = plan_arguments(Model.forward, config, module=Model())
    # 12 goes in through one layer and comes out of another (64 too, but the smallest is the latents')
    assert plan.candidates[0] == {"randn": [1, 12, 4, 4], "seed": 0}, plan.candidates[0]


def test_optional_arguments_are_tried_filled_one_left_out_then_none():
    def forward(self, hidden_states, img_ids=None, guidance=None):
        raise AssertionError("not called")

    plan = plan_arguments(forward, {"in_channels": 4, "axes_dims_rope": (4, 4, 8)})
    tried = [sorted(specs) for specs in attempts(plan)]
    # all filled, img_ids left out, guidance left out, none; then the next hidden_states layout
    assert tried[:5] == [["guidance", "hidden_states", "img_ids"], ["guidance", "hidden_states"],
                         ["hidden_states", "img_ids"], ["hidden_states"], ["guidance", "hidden_states", "img_ids"]]


def test_a_layout_listed_late_is_tried_before_other_arguments_are_combined_with_it():
    def forward(self, hidden_states, timestep, encoder_attention_mask, num_frames=None, height=None, width=None):
        raise AssertionError("not called")

    plan = plan_arguments(forward, {"in_channels": 4, "joint_attention_dim": 8})
    first = {a.name: a.candidates[0] for a in plan}
    tried = list(attempts(plan))
    changes = [sum(specs.get(name) != spec for name, spec in first.items()) for specs in tried]
    # packed video tokens [B, frames * 4 * 4, C] (LTX-Video's layout, listed fifth) with every other argument as
    # listed first, before any attempt that changes two arguments: another timestep or mask dtype with it comes later
    packed = next(i for i, specs in enumerate(tried) if specs["hidden_states"]["randn"] == [1, 32, 4])
    assert changes[packed] == 1 and max(changes[:packed]) <= 1 + 3  # optional arguments left out (3) before it
    assert all(n == 1 or tried[i]["hidden_states"] == first["hidden_states"] for i, n in enumerate(changes[:packed]))


@pytest.mark.torch_independent  # reading the forward's signature
def test_a_class_whose_forward_cannot_be_synthesized_exits_2_naming_the_argument(cli, tmp_path):
    out = cli("analyze", "--model", "QwenImage21Transformer2DModel", "--workdir", str(tmp_path / "ws"), cwd=tmp_path)
    assert out.exit_code == 2, out.stderr
    (line,) = out.stderr.strip().splitlines()
    assert "forward argument 'img_mask'" in line and "--inputs FILE ([inputs] img_mask = " in line
    # the line to correct is TOML as it stands: the mask as its docstring and use made it
    given = line.split("([inputs] ", 1)[1].split(": what was tried first", 1)[0]
    assert tomllib.loads(f"[inputs]\n{given}")["inputs"]["img_mask"] == {"ones": [1, 16], "dtype": "bool"}


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


def _shape(value):
    """A tensor's shape, a list's [its length, first item's shape], a number as it is."""
    if isinstance(value, torch.Tensor):
        return tuple(value.shape)
    if isinstance(value, (list, tuple)):
        return [len(value), _shape(value[0])]
    return value


# Classes whose forward takes an argument only a role added for them makes, with the inputs it made (the catalog's
# geometry: batch 1, 8 text tokens, 4 x 4 latent tokens, 2 latent frames, 8 audio frames), at tiny size.
SYNTHESIZED = {
    "DiTTransformer2DModel": {"hidden_states": (1, 4, 8, 8), "class_labels": (1,)},  # class-conditional
    "ErnieImageTransformer2DModel": {"text_bth": (1, 8, 2560), "text_lens": (1,)},
    "GlmImageTransformer2DModel": {"prior_token_id": (1, 16), "prior_token_drop": (1, 16)},
    # text rows then the image grid's; text states stacked per tapped encoder layer (one at tiny size)
    "Krea2Transformer2DModel": {"hidden_states": (1, 16, 64), "position_ids": (24, 3),
                                "encoder_hidden_states": (1, 8, 1, 2560)},
    # channels-last video latent, RoPE positions per axis
    "Kandinsky5Transformer3DModel": {"hidden_states": (1, 2, 8, 8, 4), "visual_rope_pos": [3, (2,)],
                                     "text_rope_pos": (8,)},
    # audio latents with their context channels and a second timestep
    "AceStepTransformer1DModel": {"hidden_states": (1, 8, 64), "context_latents": (1, 8, 128), "timestep_r": (1,)},
    # [B, frames, C, H, W] latents, a timestep and a second one per latent frame
    "AnyFlowTransformer3DModel": {"hidden_states": (1, 2, 16, 8, 8), "timestep": (1, 2), "r_timestep": (1, 2)},
    "MiniMaxMusic3Transformer1DModel": {"hidden_states": (1, 128, 8), "encoder_hidden_states": (1, 8, 2048)},
}


@pytest.mark.parametrize("class_name", list(SYNTHESIZED))
def test_a_class_whose_arguments_need_the_newer_roles_builds_with_them(class_name):
    built = build_model(resolve_model(class_name), "fp32")
    assert built.spec.kind == "class"
    shapes = {name: _shape(value) for name, value in built.inputs.items()}
    assert {k: shapes.get(k) for k in SYNTHESIZED[class_name]} == SYNTHESIZED[class_name]
    if class_name == "ErnieImageTransformer2DModel":
        assert built.inputs["text_lens"].tolist() == [8] and built.inputs["text_lens"].dtype == torch.long
    if class_name == "GlmImageTransformer2DModel":
        assert built.inputs["prior_token_drop"].dtype == torch.bool and not built.inputs["prior_token_drop"].any()


# Zoo classes whose real size failed for want of a role: what the plan for their real config makes first (no model
# is built here; `sdcompile models NAME --check --size real` runs them).
REAL_PLANS = {
    # latents and caption features as lists of per-sample tensors
    "ZImageTransformer2DModel": {"x": [1, (16, 1, 4, 4)], "cap_feats": [1, (8, 2560)]},
    # a second, audio stream: latents [B, audio frames, C_audio], its text states and frame count
    "LTX2VideoTransformer3DModel": {"audio_hidden_states": (1, 8, 128), "audio_encoder_hidden_states": (1, 8, 3840),
                                    "audio_num_frames": 8},
    # a packed text (8), audio (8) and video (2 x 4 x 4) sequence's layout tensors
    "MiniMaxH3Transformer3DModel": {"audio_hidden_states": (1, 8, 32), "token_tags": (48,), "position_ids": (48, 3),
                                    "video_indices": (32,), "timestep_indices": (48,)},
    # image-encoder embeddings, zero: text-to-video
    "HunyuanVideo15Transformer3DModel": {"image_embeds": (1, 8, 1152)},
}


@pytest.mark.parametrize("class_name", list(REAL_PLANS))
def test_the_real_config_of_a_zoo_class_plans_the_arguments_its_forward_needs(class_name):
    cls = model_class(class_name)
    plan = {a.name: a for a in plan_arguments(cls.forward, constructor_defaults(cls))}
    made = {name: materialize(plan[name].candidates[0], name) for name in REAL_PLANS[class_name]}
    assert {name: _shape(value) for name, value in made.items()} == REAL_PLANS[class_name]
    if class_name == "MiniMaxH3Transformer3DModel":  # video rows after the text and audio rows, tagged 0, as many as
        assert made["video_indices"].tolist() == list(range(16, 48))  # the patchified video tokens [B, 32, 24 * 4]
        assert made["token_tags"][made["video_indices"]].eq(0).all()
        assert {"randn": [1, 32, 96], "seed": 0} in plan["hidden_states"].candidates


def test_a_class_leaving_its_latents_shape_to_the_hubs_config_is_built_with_the_catalogs_values():
    """EasyAnimate's constructor defaults in_channels, out_channels and patch_size to None (its config.json sets
    them): the defaults do not construct, so the catalog's [[unset]] values are set, and said, and its forward runs."""
    built = build_model(resolve_model("EasyAnimateTransformer3DModel"), "fp32")
    config = built.module.config
    assert (config.in_channels, config.out_channels, config.patch_size) == (4, 4, 2)
    assert any("patch_size None -> 2" in note for note in built.notes), built.notes
    with torch.no_grad():
        out = built.module(**built.inputs)
    assert torch.isfinite((out[0] if isinstance(out, tuple) else out.sample).float()).all()


def test_an_unset_width_a_group_norm_refuses_is_tried_again_at_the_catalogs_other_value():
    """DreamLite leaves in_channels to its config.json and normalizes the latent with GroupNorm(32, in_channels):
    the first [[unset]] width (4) does not construct, the table marked `instead` gives another (32), which does."""
    built = build_model(resolve_model("DreamLiteTransformer2DModel"), "fp32")
    config = built.module.config
    assert (config.in_channels, config.norm_num_groups) == (32, 32)
    assert any("in_channels None -> 32" in note for note in built.notes), built.notes
    with torch.no_grad():
        out = built.module(**built.inputs)
    assert torch.isfinite((out[0] if isinstance(out, tuple) else out.sample).float()).all()


def test_a_class_no_config_of_which_constructs_is_told_to_pass_its_config():
    from sdcompile.core.zoo.any_class import build_class

    class Unsized(torch.nn.Module):  # a width no catalog value names: only the class's config.json can give it
        def __init__(self, hidden_width: int | None = None, num_layers: int = 2):
            super().__init__()
            self.proj = torch.nn.Linear(hidden_width * 2, 4)

    with pytest.raises(BadInput) as err:
        build_class("Unsized", cls=Unsized)
    assert err.value.message.startswith("cannot build Unsized from its default config (")
    assert "TypeError" in err.value.message and "--config FILE" in err.value.fix
    assert "new-model" not in err.value.fix  # a factory would hold the same config: no way out
