"""Procedural input recipes: the few example inputs of the zoo that cannot be written as data.

Each recipe takes the keyword arguments of its catalog entry (`{ recipe = "grid_ids", height = 4, width = 4 }`)
and returns one value — or, for entries of `input_recipes`, a dict of several forward kwargs.
Floating tensors are returned in float32; the zoo casts them to the requested dtype afterwards. Recipes also make
the inputs of catalogs/any_model.toml's roles, and `sdcompile new-model` copies a recipe's source into the factory it
writes, so each one stands alone (torch and diffusers, no other function or constant of this module).
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


def full(shape: list[int], fill: float) -> torch.Tensor:
    """A float tensor of `shape` filled with `fill` (a timestep per latent frame)."""
    return torch.full(tuple(shape), float(fill))


def text_then_grid_ids(text: int, axes: int, height: int, width: int) -> torch.Tensor:
    """Position ids [text + H*W, axes] of a text-then-image sequence: text rows at the origin, then the image grid's
    rows with row and column in the last two axes, 0 elsewhere (Flux's txt_ids and img_ids concatenated)."""
    ids = torch.zeros(text + height * width, axes)
    ids[text:, -2] = torch.arange(height).repeat_interleave(width)
    ids[text:, -1] = torch.arange(width).repeat(height)
    return ids


def axis_positions(sizes: list[int], single: bool = False) -> list[torch.Tensor] | torch.Tensor:
    """RoPE positions per axis: arange(n) for each size of a token grid ((frames, height, width)); `single`: the one
    axis's arange itself (a text's positions)."""
    positions = [torch.arange(n) for n in sizes]
    return positions[0] if single else positions


def randn_list(count: int, shape: list[int], seed: int = 0) -> list[torch.Tensor]:
    """`count` random tensors of one shape, as a list (per-block states: one tensor per transformer block)."""
    generator = torch.Generator("cpu").manual_seed(seed)
    return [torch.randn(*shape, generator=generator) for _ in range(count)]


def packed_sequence(part: str, text: int, audio: int, grid: list[int]) -> torch.Tensor:
    """One layout tensor of a packed text-audio-video sequence: `text` rows, then `audio` rows, then the video's
    (frames, height, width) token `grid` frame by frame, one noise level for all of them. `part`: `timestep_indices`
    (each row's index into the distinct timesteps, [L]), `token_tags` (each row's modality, 0 video, 1 text, 2 audio,
    [L]), `position_ids` (each row's (t, h, w) RoPE position, [L, 3]: text and audio rows along t, video rows at
    (text + frame, row, column)), or `video_indices` / `audio_indices` / `text_indices` (a modality's rows)."""
    parts = ("timestep_indices", "token_tags", "position_ids", "video_indices", "audio_indices", "text_indices")
    if part not in parts:
        raise ValueError(f"packed_sequence part {part!r} is not one of {', '.join(parts)}")
    frames, height, width = grid
    video = frames * height * width
    total = text + audio + video
    rows = {"text_indices": torch.arange(text), "audio_indices": torch.arange(text, text + audio),
            "video_indices": torch.arange(text + audio, total)}
    if part in rows:
        return rows[part]
    if part == "timestep_indices":
        return torch.zeros(total, dtype=torch.long)
    if part == "token_tags":
        tags = torch.zeros(total, dtype=torch.long)
        tags[rows["text_indices"]], tags[rows["audio_indices"]] = 1, 2
        return tags
    positions = torch.zeros(total, 3)
    positions[: text + audio, 0] = torch.arange(text + audio, dtype=torch.float32)
    cells = torch.cartesian_prod(torch.arange(frames), torch.arange(height), torch.arange(width)).float()
    positions[text + audio:] = cells + torch.tensor([float(text), 0.0, 0.0])
    return positions


def token_positions(shape: list[int]) -> torch.Tensor:
    """Positions of a sequence's tokens [B, S, axes...] (or [S]): each token's index along every axis, so a rotary
    embedding of any number of axes turns each token by its own angle."""
    token_axis = 1 if len(shape) > 1 else 0
    index = torch.arange(shape[token_axis], dtype=torch.float32)
    view = [1] * len(shape)
    view[token_axis] = shape[token_axis]
    return index.view(view).expand(*shape).clone()


RECIPES: dict[str, Callable[..., Any]] = {
    "grid_ids": grid_ids,
    "grid_ids_axes": grid_ids_axes,
    "cartesian_ids": cartesian_ids,
    "rotary_3d": rotary_3d,
    "minimax_h3_packing": minimax_h3_packing,
    "packed_sequence": packed_sequence,
    "text_then_grid_ids": text_then_grid_ids,
    "axis_positions": axis_positions,
    "randn_list": randn_list,
    "full": full,
    "token_positions": token_positions,
}
