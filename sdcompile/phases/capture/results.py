from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CapturedArgument:
    name: str
    value: str  # as recorded: "Tensor[1, 4096, 64] bfloat16", "None", "3.5"


@dataclass(frozen=True)
class CaptureResult:
    out: str
    model_class: str  # "diffusers.models.transformers.transformer_flux.FluxTransformer2DModel"
    model: str  # the workspace name --model-capture records under ("flux", "cog_view4")
    config_fields: int
    calls: int
    arguments: tuple[CapturedArgument, ...]  # the first call's
    left_out: tuple[str, ...]  # "joint_attention_kwargs (AttnKwargs)": arguments replay leaves at their default
    device: str  # where the recorded tensors lived
    versions: dict[str, str | None]  # torch, diffusers, torch_npu where the program ran
    program: tuple[str, ...]
    exit_status: int  # the program's
    stopped: bool  # sdcompile ended the program once the capture was written (its remaining steps did not run)
    calls_wanted: int
    next_command: str
