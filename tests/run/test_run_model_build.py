"""`sdcompile run` on a model built beyond its name: a pipeline's capture replayed with --num-layers 1 goes through
the seven gates, every command the run's report prints carries the build options, and a run keeps a phase only for
the same build."""

from __future__ import annotations

import pytest
import torch

import sdcompile
from sdcompile.core.zoo.build_options import ModelBuild
from sdcompile.lifecycle.options import RunOptions
from sdcompile.lifecycle.state import phase_fingerprint


def _tiny_flux_pipeline_forward():
    from diffusers import FluxTransformer2DModel

    model = FluxTransformer2DModel(patch_size=1, in_channels=4, num_layers=2, num_single_layers=2,
                                   attention_head_dim=16, num_attention_heads=2, joint_attention_dim=32,
                                   pooled_projection_dim=32, axes_dims_rope=(4, 4, 8)).eval()
    ids = torch.stack(torch.meshgrid(torch.zeros(1), torch.arange(4.0), torch.arange(4.0), indexing="ij"), -1)
    with torch.no_grad():
        model(torch.randn(1, 16, 4), encoder_hidden_states=torch.randn(1, 8, 32), pooled_projections=torch.randn(1, 32),
              timestep=torch.tensor([0.75]), img_ids=ids.reshape(16, 3), txt_ids=torch.zeros(8, 3))


@pytest.mark.slow
def test_a_captured_model_goes_through_the_seven_gates_in_one_go(cli, tmp_path):
    with sdcompile.capture(tmp_path / "flux.sdcap", stop=True):
        _tiny_flux_pipeline_forward()
    out = cli("run", "--model-capture", "flux.sdcap", "--num-layers", "1", "--op", "rope", cwd=tmp_path)
    # in one go on every torch: where no pattern holds the RoPE chain (torch >= 2.12) a GraphPatternEntry carrier is
    # registered in phase 3 like a group, with no backend edit to wait for
    assert out.exit_code == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert any(line.startswith("PASS: every gate passed") for line in out.stdout.splitlines()), out.stdout[-1500:]
    assert "phase 6 integrate: pass" in out.stderr and "phase 7 copy-audit: pass" in out.stderr
    # the workspace pair is the class's zoo name, and the report's commands rebuild the same model
    report = (tmp_path / ".sdcompile/flux/rope/run/report.md").read_text()
    commands = [line for line in report.splitlines()
                if any(f"`sdcompile {c} " in line for c in ("analyze", "scaffold", "integrate"))]
    assert len(commands) == 3 and all("--model-capture flux.sdcap --num-layers 1" in c for c in commands), commands


@pytest.mark.torch_independent  # what a kept phase depends on
def test_a_phase_is_kept_only_for_the_same_build(tmp_path):
    config = tmp_path / "config.json"
    config.write_text('{"_class_name": "FluxTransformer2DModel", "num_layers": 2}')

    def options(build: ModelBuild) -> RunOptions:
        return RunOptions("flux", None, "rope", "bf16", False, None, "auto", "/t", 0.99, 2.0, build=build)

    default = phase_fingerprint("analyze", options(ModelBuild()))
    one = phase_fingerprint("analyze", options(ModelBuild(size="real", num_layers=1)))
    two = phase_fingerprint("analyze", options(ModelBuild(size="real", num_layers=2)))
    from_file = phase_fingerprint("analyze", options(ModelBuild(config=config)))
    assert len({default, one, two, from_file}) == 4
    assert phase_fingerprint("analyze", options(ModelBuild(size="real", num_layers=1))) == one
    config.write_text('{"_class_name": "FluxTransformer2DModel", "num_layers": 3}')  # the file's content counts
    assert phase_fingerprint("analyze", options(ModelBuild(config=config))) != from_file
