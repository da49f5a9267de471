"""Which cells a matrix run takes: models x ops in a fixed order, and a shard of them (`--shard i/n`: every n-th
cell from the i-th, so each shard gets a like mix of models and the shards together are the whole table)."""

from __future__ import annotations

import re

from sdcompile.util.errors import BadInput

_SHARD = re.compile(r"^(\d+)/(\d+)$")


def plan(models: tuple[str, ...], ops: tuple[str, ...]) -> list[tuple[str, str]]:
    """Every (model, op) cell, model by model, ops in the order given."""
    return [(model, op) for model in models for op in ops]


def parse_shard(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    match = _SHARD.match(text.strip())
    if not match or not 1 <= int(match[1]) <= int(match[2]):
        raise BadInput(f"--shard {text!r} is not i/n with 1 <= i <= n", "e.g. --shard 2/4 for the second of four")
    return int(match[1]), int(match[2])


def shard_of(cells: list[tuple[str, str]], shard: tuple[int, int] | None) -> list[tuple[str, str]]:
    if shard is None:
        return cells
    index, count = shard
    return cells[index - 1::count]
