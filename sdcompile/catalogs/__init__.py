"""Catalogs as data (TOML): backends, and the tables later phases add. `load(name)` reads one."""

from __future__ import annotations

import tomllib
from functools import cache
from importlib import resources
from typing import Any


@cache
def load(name: str) -> dict[str, Any]:
    """Parse `sdcompile/catalogs/<name>.toml` (cached; treat the result as read-only)."""
    text = resources.files(__name__).joinpath(f"{name}.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)
