"""Source file paths as reports show them."""

from __future__ import annotations


def short_path(path: str) -> str:
    """`.../site-packages/diffusers/models/normalization.py` -> `diffusers/models/normalization.py`."""
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in path:
            return path.rsplit(marker, 1)[1]
    return path
