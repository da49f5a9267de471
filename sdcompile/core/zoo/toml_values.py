"""Values read from the zoo's TOML as the models take them (no torch: the zoo catalog loads without it)."""

from __future__ import annotations

from typing import Any


def tupled(value: Any) -> Any:
    """TOML arrays become tuples, as the constructors and forwards of diffusers expect."""
    if isinstance(value, list):
        return tuple(tupled(v) for v in value)
    if isinstance(value, dict):
        return {k: tupled(v) for k, v in value.items()}
    return value
