"""`sdcompile status`: where every model/op pair stands, and what the target registers."""

from __future__ import annotations

from pathlib import Path

from sdcompile.core.environment import collect_versions
from sdcompile.core.target.discovery import find_target
from sdcompile.core.target.registry import read_target_registry
from sdcompile.core.target.tree_guard import recover_tree
from sdcompile.phases.status.results import StatusReport, TargetStatus
from sdcompile.util.errors import NotATarget
from sdcompile.workspace.phases import PHASES
from sdcompile.workspace.store import Workspace


def collect_status(repo: Path | str | None, workdir: Path | str | None, require_target: bool) -> StatusReport:
    ws = Workspace(workdir)
    target, error, tree, recovery = None, None, None, None
    try:
        tree = find_target(repo)
        recovery = recover_tree(tree)
        registry = read_target_registry(tree)
        target = TargetStatus(str(tree.root), tree.version, tree.found_by, registry.groups)
    except NotATarget as exc:
        # Without an explicit --repo, status still shows the workspace; with one, a bad tree is an error.
        if require_target:
            raise
        error = exc.one_line()
    return StatusReport(str(ws.root), PHASES, tuple(ws.pairs()), target, error, collect_versions(tree),
                        recovery.one_line() if recovery else None)
