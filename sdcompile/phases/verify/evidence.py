"""The files verify keeps as evidence in the workspace, in folders named after groups, patterns and models."""

from __future__ import annotations

from pathlib import Path

from sdcompile.util.fsutil import atomic_write_text
from sdcompile.workspace.store import safe_name


def write_evidence(path: Path, text: str) -> Path:
    """Write one evidence file atomically; returns its path."""

    atomic_write_text(path, text)
    return path


def folder_name(label: str) -> str:
    """A group, pattern or model label as a folder name."""

    return safe_name(label)
