"""Procedural input recipes: the few example inputs of the zoo that cannot be written as data.

Each recipe takes the keyword arguments of its catalog entry (`{ recipe = "grid_ids", height = 4, width = 4 }`)
and returns one value — or, for entries of `input_recipes`, a dict of several forward kwargs.
Floating tensors are returned in float32; the zoo casts them to the requested dtype afterwards.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


def grid_ids(height: int, width: int) -> torch.Tensor:
    """Flux-style image position ids [H*W, 3]: (0, row, column) per latent token."""
    ids = torch.zeros(height * width, 3)
    ids[:, 1] = torch.arange(height).repeat_interleave(width)
    ids[:, 2] = torch.arange(width).repeat(height)
    return ids


def grid_ids_axes(axes: int, height: int, width: int) -> torch.Tensor:
    """Image position ids [H*W, axes] for any number of RoPE axes: row and column in the last two, 0 elsewhere (Flux's
    layout for 3 axes; Flux 3 and LongCat-Image use 4)."""
    if axes < 2:
        raise ValueError(f"position ids need at least 2 axes (row, column), not {axes}")
    ids = torch.zeros(height * width, axes)
    ids[:, -2] = torch.arange(height).repeat_interleave(width)
    ids[:, -1] = torch.arange(width).repeat(height)
    return ids


def cartesian_ids(axes: list[int]) -> torch.Tensor:
    """Flux2-style ids [1, prod(axes), len(axes)]: every combination of positions along each axis."""
    return torch.cartesian_prod(*(torch.arange(n) for n in axes))[None]


def rotary_3d(embed_dim: int, height: int, width: int, frames: int, patch_size: int) -> tuple[torch.Tensor, ...]:
    """CogVideoX's (cos, sin): its pipeline, not the transformer, builds them with get_3d_rotary_pos_embed."""
    from diffusers.models.embeddings import get_3d_rotary_pos_embed

    h, w = height // patch_size, width // patch_size
    return get_3d_rotary_pos_embed(
        embed_dim=embed_dim, crops_coords=((0, 0), (h, w)), grid_size=(h, w), temporal_size=frames
    )


def minimax_h3_packing(text: int, audio: int, video: int) -> dict[str, torch.Tensor]:
    """MiniMax-H3 packs text, audio and video tokens into one sequence; these are its layout tensors."""
    total = text + audio + video
    text_idx = torch.arange(text)
    audio_idx = torch.arange(text, text + audio)
    video_idx = torch.arange(text + audio, total)
    tags = torch.empty(total, dtype=torch.long)
    tags[text_idx], tags[audio_idx], tags[video_idx] = 1, 2, 0  # 0 video, 1 text, 2 audio
    timestep_indices = torch.zeros(total, dtype=torch.long)
    timestep_indices[audio_idx] = 1
    positions = torch.zeros(total, 3)
    positions[:, 0] = torch.arange(total, dtype=torch.float32)
    positions[video_idx, 1] = torch.arange(video, dtype=torch.float32) % 4
    positions[video_idx, 2] = torch.arange(video, dtype=torch.float32) % 2
    return {
        "timestep_indices": timestep_indices,
        "token_tags": tags,
        "position_ids": positions,
        "video_indices": video_idx,
        "audio_indices": audio_idx,
        "text_indices": text_idx,
    }


RECIPES: dict[str, Callable[..., Any]] = {
    "grid_ids": grid_ids,
    "grid_ids_axes": grid_ids_axes,
    "cartesian_ids": cartesian_ids,
    "rotary_3d": rotary_3d,
    "minimax_h3_packing": minimax_h3_packing,
}
