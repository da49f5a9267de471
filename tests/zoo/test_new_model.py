"""`sdcompile new-model CLASS --out FILE`: a factory with the class's config and synthesized inputs spelled out,
run once from the file; then usable as --model-file by any command."""

from __future__ import annotations

import functools
import json
import py_compile
import re
import subprocess
import sys

import pytest

from sdcompile.phases.new_model.factory_source import literal


def test_a_factory_is_written_runs_and_serves_as_a_model_file(cli, tmp_path):
    out = cli("new-model", "CogView4Transformer2DModel", "--out", "cogview4.py", "--json", cwd=tmp_path)
    assert out.exit_code == 0, out.stderr
    result = json.loads(out.stdout)
    ran = {p["op"]: p for p in result["primitives"]}
    assert ran["rope"]["implementations"] == ["embeddings.apply_rotary_emb"] and ran["rope"]["sites"] == 2
    assert ran["adaln"]["implementations"] and ran["rmsnorm"]["implementations"] == []
    assert out.stderr.strip().splitlines()[-1].startswith("PASS: factory for CogView4Transformer2DModel written to")
    factory = tmp_path / "cogview4.py"
    py_compile.compile(str(factory), doraise=True)
    lint = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--isolated", "--line-length", "120",
                           str(factory)], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout
    text = factory.read_text()
    assert '"num_layers": 1,  # default 30' in text and "from diffusers import CogView4Transformer2DModel" in text
    analyzed = cli("analyze", "--model-file", "cogview4.py:build", "--op", "rope", "--json", "--workdir", "ws",
                   cwd=tmp_path)
    assert analyzed.exit_code == 0, analyzed.stderr
    assert json.loads(analyzed.stdout)["ops"][0]["site_count"] == 1


@pytest.mark.torch_independent  # writing the file
def test_an_existing_file_is_kept_without_force_and_a_preview_writes_nothing(cli, tmp_path):
    mine = tmp_path / "model.py"
    mine.write_text("# my edits\n")
    out = cli("new-model", "Flux3Transformer2DModel", cwd=tmp_path)
    assert out.exit_code == 2 and "already exists" in out.stderr and "--force" in out.stderr
    assert mine.read_text() == "# my edits\n"
    preview = cli("new-model", "Flux3Transformer2DModel", "--out", "flux3.py", "--dry-run", cwd=tmp_path)
    assert preview.exit_code == 0, preview.stderr
    assert "def build():" in preview.stdout and "def grid_ids_axes(" in preview.stdout  # the recipe, copied in
    assert not (tmp_path / "flux3.py").exists()


@pytest.mark.torch_independent  # reading the forward's signature
def test_an_argument_it_cannot_make_is_written_as_a_call_to_fill_in_and_exits_1(cli, tmp_path):
    out = cli("new-model", "QwenImage21Transformer2DModel", "--out", "qwen.py", cwd=tmp_path)
    assert out.exit_code == 1, out.stderr
    assert out.stdout.strip().splitlines()[-1] == (
        "FAIL: factory for QwenImage21Transformer2DModel written to qwen.py; "
        "it runs once you fill in img_mask in inputs()")
    text = (tmp_path / "qwen.py").read_text()
    # no role names it: sdcompile made it as the forward uses it (a mask), and no forward ran with that
    assert "\"img_mask\": fill_in('img_mask', \"no example-input role names it, and no forward ran with it made as " \
           "the forward's docstring and use of it suggest\")," in text
    py_compile.compile(str(tmp_path / "qwen.py"), doraise=True)
    # until then the factory says what to do, as any command reading it reports
    analyzed = cli("analyze", "--model-file", "qwen.py:build", "--workdir", "ws", cwd=tmp_path)
    assert analyzed.exit_code == 2 and "fill in img_mask in inputs() of this file" in analyzed.stderr


def test_only_literals_reach_the_file():
    assert literal((256, 256)) == "(256, 256)" and literal("rms_norm") == "'rms_norm'"
    assert literal(object()) is None and literal(float("nan")) is None  # left to the class's default


def test_a_class_whose_forward_no_synthesized_inputs_run_is_written_to_correct_and_exits_2(cli, tmp_path):
    """HunyuanDiT constructs (its latent's shape set from the catalog) but no forward runs with the inputs sdcompile
    tries: new-model still writes the factory, with the first inputs tried, says what the last raised and where in
    the model's code, and exits 2 (the model's forward raised, as every command answers it),
    so the way out `--model HunyuanDiT2DModel` prints (write a factory with new-model, edit it) works as printed."""
    analyzed = cli("analyze", "--model", "HunyuanDiT2DModel", "--workdir", "ws", cwd=tmp_path)
    assert analyzed.exit_code == 2 and "sdcompile new-model HunyuanDiT2DModel --out model.py" in analyzed.stderr
    out = cli("new-model", "HunyuanDiT2DModel", "--out", "model.py", "--json", cwd=tmp_path)
    assert out.exit_code == 2, out.stderr
    result = json.loads(out.stdout)
    assert result["forward_error"].startswith("one block, hidden_states randn[") and "RuntimeError" in \
        result["forward_error"]
    assert re.search(r"\(diffusers/models/[\w/]+\.py:\d+ in \w+\)$", result["forward_error"])  # the model's line
    assert out.stderr.strip().splitlines()[-1] == (
        "FAIL: factory for HunyuanDiT2DModel written to model.py; its forward raised with every input tried: "
        "correct inputs() (or the config)")
    text = (tmp_path / "model.py").read_text()
    py_compile.compile(str(tmp_path / "model.py"), doraise=True)
    assert '"patch_size": 2,  # default None' in text and '"hidden_states"' in text


def test_a_class_whose_own_forward_raises_is_written_and_exit_2_naming_its_line(monkeypatch, tmp_path):
    """A diffusers class whose forward raises (here SD3's, made to raise where it starts, its signature kept so the
    inputs are synthesized as for the real one): exit 2 naming the line, the factory written to correct."""
    from diffusers import SD3Transformer2DModel

    from sdcompile.phases.new_model.phase import new_model

    @functools.wraps(SD3Transformer2DModel.forward)
    def forward(self, hidden_states, *args, **kwargs):
        raise ValueError(f"{tuple(hidden_states.shape)}: the latent is not a multiple of 3")

    raises = forward.__code__.co_firstlineno + 2
    monkeypatch.setattr(SD3Transformer2DModel, "forward", forward)
    result = new_model("SD3Transformer2DModel", tmp_path / "sd3.py")
    assert result.exit_code == 2 and not result.primitives
    said = result.forward_error
    assert re.search(rf"ValueError: \([\d, ]+\): the latent is not a multiple of 3 "
                     rf"\(tests/zoo/test_new_model.py:{raises} in forward\)$", said), said
    assert "SD3Transformer2DModel" in (tmp_path / "sd3.py").read_text()
