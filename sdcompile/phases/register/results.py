"""What `sdcompile register` reports: the pieces and files of one registration edit, one JSON document with --json."""

from __future__ import annotations

from dataclasses import dataclass

from sdcompile.core.environment import Versions
from sdcompile.core.target.naming import RegistrationNames
from sdcompile.core.target.ordering import OrderingViolation


@dataclass(frozen=True)
class PieceChange:
    file: str  # relative to the target root
    piece: str  # one of carrier.GROUP_PIECES / carrier.ENTRIES_PIECES
    before: bool  # present before the command
    after: bool  # present after it (planned, with --dry-run)


@dataclass(frozen=True)
class FileChange:
    file: str
    changed: bool
    diff: str  # unified diff, empty when unchanged


@dataclass(frozen=True)
class MeasuredPlacement:
    """Where register put a group because scaffold measured generic groups taking part of its sites when it is
    registered after them (specific before generic)."""

    before_flag: str  # the flag of the earliest such group: the new group goes just before it
    position: int  # 1-based, in pattern_registry
    shadowing: tuple[str, ...]  # the groups measured taking its sites
    record: str  # the scaffold record the measurement comes from


@dataclass(frozen=True)
class RegisterResult:
    action: str  # "register" or "undo"
    outcome: str  # registered | completed | already registered | removed | not registered
    target_root: str
    target_version: str
    model: str
    op: str
    names: RegistrationNames
    pattern_file: str  # relative to the target root
    pattern_file_status: str
    # 1-based registry position afterwards (a graph-entries carrier: its call's order among those calls, all ahead of
    # the registry); None when not registered
    position: int | None
    registry_size: int  # entries afterwards
    pieces: tuple[PieceChange, ...]
    files: tuple[FileChange, ...]
    ordering: tuple[OrderingViolation, ...]  # known ordering rules the entry breaks at its position
    notes: tuple[str, ...]
    dry_run: bool
    written: bool
    workspace: str | None  # the pair's workspace folder, when the phase was recorded
    versions: Versions | None = None  # what made the edit (torch, torch_npu, diffusers, the tree's MindIE-SD)
    carrier: str = "pattern group"  # registry.PATTERN_GROUP | registry.GRAPH_ENTRIES | registry.GRAPH_PASS
    # a custom graph pass: whether mindie_sd_backend.py calls it, which is what switches it on (None: not a pass)
    backend_calls: bool | None = None
    backend_diff: str | None = None  # scaffold's saved backend edit for the pass, when the workspace holds it
    placement: MeasuredPlacement | None = None  # a measured place (no --before/--after given), else appended
    ignored_position: str | None = None  # the --before/--after key a GraphPatternEntry carrier cannot use
    skipped: str | None = None  # scaffold's decision when it left nothing to register (decided.NOTHING_TO_REGISTER)
    reused: tuple[str, ...] = ()  # the target's groups scaffold reused (skipped == "reuse")
