"""Phase 3 for a custom graph pass (written by scaffold --path graph-pass, only on request: upstream forbids them):
nothing is registered, the pass runs once mindie_sd_backend.py calls it. scaffold shows that edit and saves it as
backend.diff; sdcompile never makes it. What register checks is that the call is there."""

from __future__ import annotations

from sdcompile.core.environment import collect_versions
from sdcompile.core.target.discovery import TargetTree
from sdcompile.core.target.edits.backend_pass import calls_pass
from sdcompile.core.target.naming import RegistrationNames
from sdcompile.core.target.registry import GRAPH_PASS, TargetRegistry
from sdcompile.phases.register.results import PieceChange, RegisterResult
from sdcompile.workspace.store import Workspace


def backend_call(tree: TargetTree, registry: TargetRegistry, names: RegistrationNames, model: str, op: str,
                 notes: list[str], dry_run: bool, workdir) -> RegisterResult:
    """The pair's custom graph pass and whether the backend calls it (`backend_calls`), with scaffold's saved edit."""

    backend = tree.backend_file
    rel = str(backend.relative_to(tree.root))
    calls = calls_pass(backend.read_bytes(), names.pass_class, rel)
    diff = Workspace(workdir).pair_dir(model, op, create=False) / "scaffold" / "backend.diff"
    return RegisterResult(
        action="register", outcome="called by the backend" if calls else "not called by the backend",
        target_root=str(tree.root), target_version=tree.version, model=model, op=op, names=names,
        pattern_file=str((tree.passes_dir / f"{names.pass_module}.py").relative_to(tree.root)),
        pattern_file_status=f"defines {names.pass_class}", position=None, registry_size=len(registry.entries),
        pieces=(PieceChange(rel, "backend call", calls, calls),), files=(), ordering=(), notes=tuple(notes),
        dry_run=dry_run, written=False, workspace=None, versions=collect_versions(tree), carrier=GRAPH_PASS,
        backend_calls=calls, backend_diff=str(diff.resolve()) if diff.is_file() else None)
