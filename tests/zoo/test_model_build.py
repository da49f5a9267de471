"""How a model is built beyond its name: --size real with --num-layers, --config (a real config.json or model
folder), --inputs (forward arguments as data) and the memory check that keeps a real config from being built when it
does not fit."""

from __future__ import annotations

import json

import pytest

from sdcompile.core.zoo.any_class import constructor_defaults
from sdcompile.core.zoo.build_options import ModelBuild
from sdcompile.core.zoo.models import build_model, resolve_model
from sdcompile.util.errors import BadInput

# A transformer config as `save_pretrained` writes it (CogView4's real widths are 32 heads of 128; these are smaller so
# the test stays quick, and differ from the class's defaults so the test can see they were used).
COGVIEW4_CONFIG = {
    "_class_name": "CogView4Transformer2DModel",
    "_diffusers_version": "0.33.0.dev0",
    "_name_or_path": "THUDM/CogView4-6B",
    "attention_head_dim": 64,
    "condition_dim": 256,
    "in_channels": 16,
    "num_attention_heads": 4,
    "num_layers": 3,
    "out_channels": 16,
    "patch_size": 2,
    "pos_embed_max_size": 128,
    "rope_axes_dim": [128, 128],
    "sample_size": 128,
    "text_embed_dim": 512,
    "time_embed_dim": 128,
    "a_field_from_another_release": 1,
}


def _model_folder(tmp_path):
    folder = tmp_path / "CogView4-6B"
    (folder / "transformer").mkdir(parents=True)
    (folder / "transformer" / "config.json").write_text(json.dumps(COGVIEW4_CONFIG, indent=2))
    (folder / "model_index.json").write_text(json.dumps({"_class_name": "CogView4Pipeline"}))
    return folder


def test_a_model_folder_s_config_names_its_class_and_is_built_at_its_widths_with_num_layers(tmp_path):
    folder = _model_folder(tmp_path)
    spec = resolve_model(build=ModelBuild(config=folder, num_layers=2))
    assert (spec.kind, spec.name, spec.class_name) == ("class", "cog_view4", "CogView4Transformer2DModel")
    built = build_model(spec, "fp32")
    config = built.module.config
    assert (config.num_layers, config.num_attention_heads, config.attention_head_dim) == (2, 4, 64)
    assert built.label == "cog_view4 (CogView4Transformer2DModel, real config)"
    assert f"size real: {folder / 'transformer' / 'config.json'}; num_layers 3 -> 2" in built.notes
    assert any("left out: a_field_from_another_release" in n for n in built.notes), built.notes
    # --size tiny shrinks the same config instead (two heads of its 64 channels)
    tiny = build_model(resolve_model(build=ModelBuild(config=folder, size="tiny")), "fp32")
    assert (tiny.module.config.num_attention_heads, tiny.module.config.attention_head_dim) == (2, 64)


def test_a_config_of_another_class_than_model_names_both(tmp_path):
    with pytest.raises(BadInput, match="is a CogView4Transformer2DModel config, and --model names "
                                       "FluxTransformer2DModel"):
        resolve_model("flux", build=ModelBuild(config=_model_folder(tmp_path)))
    (tmp_path / "empty").mkdir()
    with pytest.raises(BadInput, match="neither transformer/config.json nor config.json"):
        resolve_model("flux", build=ModelBuild(config=tmp_path / "empty"))


def test_real_size_is_the_class_s_own_widths_and_a_zoo_name_keeps_its_pair():
    spec = resolve_model("flux", build=ModelBuild(size="real", num_layers=1))
    assert spec.name == "flux" and "at real size, --num-layers 1" in spec.origin
    built = build_model(resolve_model("CogView4Transformer2DModel", build=ModelBuild(size="real", num_layers=1)),
                        "bf16")
    config, defaults = built.module.config, constructor_defaults(type(built.module))
    assert defaults["num_layers"] > 1 and config.num_layers == 1
    assert (config.num_attention_heads, config.attention_head_dim) == (defaults["num_attention_heads"],
                                                                       defaults["attention_head_dim"])
    assert built.inputs["encoder_hidden_states"].shape == (1, 8, config.text_embed_dim)  # synthesized from the config


def test_a_real_config_larger_than_the_memory_allowed_is_refused_before_it_is_built(monkeypatch):
    monkeypatch.setenv("SDCOMPILE_MEMORY_GB", "2")
    with pytest.raises(BadInput, match=r"WanTransformer3DModel at real size has 14\.3 B parameters") as caught:
        build_model(resolve_model("wan", build=ModelBuild(size="real")), "bf16")
    assert "--num-layers 1" in caught.value.fix and "2 GB are available" in caught.value.message


def test_num_layers_on_a_zoo_model_sets_every_block_count():
    built = build_model(resolve_model("flux", build=ModelBuild(num_layers=2)), "fp32")
    assert (built.module.config.num_layers, built.module.config.num_single_layers) == (2, 2)
    assert len(built.module.transformer_blocks) == 2 and built.module.config.attention_head_dim == 16


MASK = ", ".join(["false"] * 8 + ["true"] * 4)
INPUTS = f"""
# QwenImage 2.1 marks the vision-language encoder's image slots: 8 text tokens, then 16 latent tokens / 4
[inputs]
img_mask = {{ tensor = [[{MASK}]], dtype = "bool" }}
encoder_hidden_states = {{ randn = ["B", "T", "D_TEXT"], seed = 7 }}
"""


def test_inputs_give_the_argument_synthesis_cannot_make(tmp_path):
    (tmp_path / "inputs.toml").write_text(INPUTS)
    built = build_model(resolve_model("QwenImage21Transformer2DModel",
                                      build=ModelBuild(inputs=tmp_path / "inputs.toml")), "fp32")
    assert built.inputs["img_mask"].dtype.is_floating_point is False and built.inputs["img_mask"].sum() == 4
    # shapes name the config's symbols: D_TEXT is this class's text embedding width
    assert built.inputs["encoder_hidden_states"].shape == (1, 8, built.module.config["context_in_dim"])
    assert f"inputs from {tmp_path / 'inputs.toml'}: img_mask, encoder_hidden_states" in built.notes


def test_inputs_override_a_zoo_model_s_and_a_misspelt_argument_is_named(tmp_path):
    (tmp_path / "inputs.toml").write_text('[inputs]\ntimestep = { tensor = [0.25] }\n')
    built = build_model(resolve_model("flux", build=ModelBuild(inputs=tmp_path / "inputs.toml")), "fp32")
    assert built.inputs["timestep"].tolist() == [0.25] and built.inputs["hidden_states"].shape == (1, 16, 4)
    (tmp_path / "typo.toml").write_text('[inputs]\ntimestpe = { tensor = [0.25] }\n')
    with pytest.raises(BadInput, match=r"names timestpe \(did you mean timestep\?\), which the forward does not take"):
        build_model(resolve_model("flux", build=ModelBuild(inputs=tmp_path / "typo.toml")), "fp32")
    (tmp_path / "bad.toml").write_text('timestep = 1\n')
    with pytest.raises(BadInput, match="holds timestep; it takes an \\[inputs\\] table"):
        build_model(resolve_model("flux", build=ModelBuild(inputs=tmp_path / "bad.toml")), "fp32")


def test_build_options_that_cannot_apply_are_refused_by_the_cli(cli, tmp_path):
    (tmp_path / "m.py").write_text("def build():\n    raise AssertionError('not called')\n")
    out = cli("analyze", "--model-file", "m.py:build", "--size", "real", cwd=tmp_path)
    assert out.exit_code == 2 and "apply to --model, not to --model-file" in out.stderr, out.stderr
    out = cli("analyze", "--model", "flux", "--size", "rael", cwd=tmp_path)
    assert out.exit_code == 2 and "did you mean real" in out.stderr, out.stderr
    out = cli("analyze", "--model", "flux", "--num-layers", "0", cwd=tmp_path)
    assert out.exit_code == 2 and "--num-layers" in out.stderr, out.stderr
    out = cli("analyze", "--model", "flux", "--config", "missing.json", cwd=tmp_path)
    assert out.exit_code == 2 and "missing.json does not exist" in out.stderr, out.stderr
