"""What `sdcompile status` returns: the workspace's pairs and the target's registered groups."""

from __future__ import annotations

from dataclasses import dataclass

from sdcompile.core.environment import Versions
from sdcompile.core.target.registry import RegisteredGroup
from sdcompile.workspace.store import PairState


@dataclass(frozen=True)
class TargetStatus:
    root: str
    version: str
    found_by: str
    groups: tuple[RegisteredGroup, ...]


@dataclass(frozen=True)
class StatusReport:
    workspace: str
    phases: tuple[str, ...]
    pairs: tuple[PairState, ...]
    target: TargetStatus | None
    target_error: str | None  # why no target is shown, when --repo was not required
    versions: Versions  # read from metadata and the tree: status imports no torch
    recovered: str | None = None  # an interrupted edit of the tree status completed or rolled back first
