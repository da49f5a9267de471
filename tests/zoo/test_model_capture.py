"""Capture from a pipeline and replay: `sdcompile.capture` (a context manager) and `sdcompile capture -- PROGRAM`
record a transformer's class, config and forward inputs where the pipeline runs; `--model-capture FILE` rebuilds it
with random weights and the recorded inputs anywhere."""

from __future__ import annotations

import json
import shlex
import sys
import zipfile

import pytest
import torch

import sdcompile
from sdcompile.core.zoo.build_options import ModelBuild
from sdcompile.core.zoo.capture_file import read_header
from sdcompile.core.zoo.models import build_model, resolve_model
from sdcompile.core.zoo.recorder import CaptureError
from sdcompile.util.errors import BadInput

# A pipeline as diffusers writes them: it prepares the latents, the text states and the RoPE positions itself and
# calls the transformer once per step, positionally and by keyword. Only the pipeline knows these inputs.
PIPELINE = '''
import sys

import torch
from diffusers import FluxTransformer2DModel


class TinyFluxPipeline:
    def __init__(self):
        self.transformer = FluxTransformer2DModel(
            patch_size=1, in_channels=4, num_layers=2, num_single_layers=2, attention_head_dim=16,
            num_attention_heads=2, joint_attention_dim=32, pooled_projection_dim=32, axes_dims_rope=(4, 4, 8)).eval()
        self.steps_run = 0

    def prepare(self, height, width):
        ids = torch.stack(torch.meshgrid(torch.zeros(1), torch.arange(height * 1.0), torch.arange(width * 1.0),
                                         indexing="ij"), -1).reshape(height * width, 3)
        return torch.randn(1, height * width, 4), ids

    @torch.no_grad()
    def __call__(self, steps=4, height=3, width=5):
        latents, img_ids = self.prepare(height, width)
        text, pooled = torch.randn(1, 6, 32), torch.randn(1, 32)
        for i in range(steps):
            noise = self.transformer(latents, encoder_hidden_states=text, pooled_projections=pooled,
                                     timestep=torch.tensor([1.0 - i / steps]), img_ids=img_ids,
                                     txt_ids=torch.zeros(6, 3), return_dict=False)[0]
            latents = latents - noise / steps
            self.steps_run += 1
            print(f"step {i}", flush=True)
        return latents


if __name__ == "__main__":
    torch.manual_seed(0)
    TinyFluxPipeline()(steps=int(sys.argv[1]))
    print("pipeline done", flush=True)
'''


@pytest.fixture
def pipeline_module(tmp_path, monkeypatch):
    (tmp_path / "tiny_pipeline.py").write_text(PIPELINE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    return importlib.import_module("tiny_pipeline")


def test_the_context_manager_records_the_first_forward_and_replay_rebuilds_it(pipeline_module, tmp_path):
    pipe = pipeline_module.TinyFluxPipeline()
    with sdcompile.capture(tmp_path / "flux.sdcap", stop=True) as recorder:
        pipe(steps=4, height=3, width=5)
    assert pipe.steps_run == 0  # stopped inside the first forward's return: the other steps never ran
    assert torch.nn.Module.__call__ is torch.nn.modules.module.Module._wrapped_call_impl  # put back
    header = read_header(tmp_path / "flux.sdcap")
    assert (header.module, header.qualname) == ("diffusers.models.transformers.transformer_flux",
                                                "FluxTransformer2DModel")
    assert header.config["num_layers"] == 2 and header.config["axes_dims_rope"] == [4, 4, 8]
    assert header.calls[0]["hidden_states"] == "Tensor[1, 15, 4] float32"  # bound to its name, though positional
    assert header.calls[0]["img_ids"] == "Tensor[15, 3] float32" and header.left_out == {}
    recorded = recorder.calls[0]

    spec = resolve_model(build=ModelBuild(capture=tmp_path / "flux.sdcap", num_layers=1))
    assert (spec.kind, spec.name) == ("capture", "flux")  # the zoo's pair for a zoo class
    built = build_model(spec, "fp32")
    assert built.module.config.num_layers == 1 and built.module.config.num_single_layers == 1
    assert built.module.config.axes_dims_rope == [4, 4, 8] or tuple(built.module.config.axes_dims_rope) == (4, 4, 8)
    for name in ("hidden_states", "img_ids", "encoder_hidden_states"):
        assert torch.equal(built.inputs[name], recorded[name]), name
    assert built.inputs["timestep"].tolist() == [1.0]
    with torch.no_grad():
        out = built.module(**built.inputs)
    assert out[0].shape == (1, 15, 4)


def test_a_block_that_runs_no_transformer_is_an_error_and_writes_nothing(tmp_path):
    with pytest.raises(CaptureError, match="no transformer forward ran"):
        with sdcompile.capture(tmp_path / "none.sdcap"):
            torch.nn.Linear(2, 2)(torch.ones(2))
    assert not (tmp_path / "none.sdcap").exists()


def test_a_file_that_is_not_a_capture_is_refused_naming_it(tmp_path):
    (tmp_path / "x.sdcap").write_text("not a zip")
    with pytest.raises(BadInput, match="x.sdcap is not a capture"):
        resolve_model(build=ModelBuild(capture=tmp_path / "x.sdcap"))
    with zipfile.ZipFile(tmp_path / "y.sdcap", "w") as archive:
        archive.writestr("capture.json", json.dumps({"format": "sdcompile-capture", "version": 99}))
    with pytest.raises(BadInput, match="capture version 99"):
        resolve_model(build=ModelBuild(capture=tmp_path / "y.sdcap"))


def test_the_command_records_a_program_s_pipeline_and_its_next_command_runs_as_printed(cli, tmp_path):
    (tmp_path / "infer.py").write_text(PIPELINE)
    out = cli("capture", "--out", "flux.sdcap", "--", sys.executable, "infer.py", "4", cwd=tmp_path)
    assert out.exit_code == 0, out.stderr
    assert "step 0" not in out.stderr and "pipeline done" not in out.stderr  # stopped once the file was written
    assert "hidden_states: Tensor[1, 15, 4] float32" in out.stdout
    assert "the program was stopped once the capture was written" in out.stdout
    assert out.stdout.strip().splitlines()[-1] == "PASS: captured FluxTransformer2DModel as flux: flux.sdcap"
    assert not list(tmp_path.glob(".flux.sdcap*"))  # nothing staged is left
    (next_line,) = [line for line in out.stdout.splitlines() if line.startswith("next: ")]
    argv = shlex.split(next_line.removeprefix("next: "))
    assert argv[:4] == ["sdcompile", "analyze", "--model-capture", "flux.sdcap"]
    analyzed = cli(*argv[1:], "--op", "rope", "--json", cwd=tmp_path)
    assert analyzed.exit_code == 0, analyzed.stderr
    result = json.loads(analyzed.stdout)
    assert result["model"] == "flux" and "capture" in result["origin"]
    assert result["ops"][0]["site_count"] == 2  # one double and one single block (--num-layers 1) call the RoPE


def test_keep_running_lets_the_program_finish_and_a_file_is_never_replaced_without_force(cli, tmp_path):
    (tmp_path / "infer.py").write_text(PIPELINE)
    (tmp_path / "flux.sdcap").write_text("mine")
    out = cli("capture", "--out", "flux.sdcap", "--", sys.executable, "infer.py", "2", cwd=tmp_path)
    assert out.exit_code == 2 and "already exists" in out.stderr and (tmp_path / "flux.sdcap").read_text() == "mine"
    out = cli("capture", "--out", "flux.sdcap", "--calls", "2", "--keep-running", "--force", "--json", "--",
              sys.executable, "infer.py", "3", cwd=tmp_path)
    assert out.exit_code == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["calls"] == 2 and not result["stopped"] and result["exit_status"] == 0
    assert "pipeline done" in out.stderr  # the program's own output, on stderr under --json


def test_a_program_that_runs_no_transformer_exits_2_and_leaves_out_as_it_was(cli, tmp_path):
    (tmp_path / "nothing.py").write_text("print('no model here')\n")
    out = cli("capture", "--out", "x.sdcap", "--", sys.executable, "nothing.py", cwd=tmp_path)
    assert out.exit_code == 2, out.stderr
    assert "ran no diffusers transformer forward (exit status 0)" in out.stderr and not (tmp_path / "x.sdcap").exists()
    out = cli("capture", "--out", "x.sdcap", cwd=tmp_path)
    assert out.exit_code == 2 and "no program to run" in out.stderr


def test_a_capture_takes_no_other_config_nor_a_tiny_size(pipeline_module, tmp_path):
    with sdcompile.capture(tmp_path / "flux.sdcap", stop=True):
        pipeline_module.TinyFluxPipeline()(steps=1)
    (tmp_path / "config.json").write_text(json.dumps({"_class_name": "FluxTransformer2DModel"}))
    with pytest.raises(BadInput, match="the capture holds the config it was recorded with"):
        resolve_model(build=ModelBuild(capture=tmp_path / "flux.sdcap", config=tmp_path / "config.json"))
    with pytest.raises(BadInput, match="the captured inputs have the real model's shapes"):
        resolve_model(build=ModelBuild(capture=tmp_path / "flux.sdcap", size="tiny"))
    with pytest.raises(BadInput, match="both --model and --model-capture were given"):
        resolve_model("flux", build=ModelBuild(capture=tmp_path / "flux.sdcap"))
