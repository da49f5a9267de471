"""Phase 3 when scaffold decided there is nothing to register: it reused groups the target already registers, or
the model graph already calls the fused op (diffusers' own NPU branch). register says so and records the phase as
skipped, from `run` and from the command alike, instead of looking for a pattern file that was never written."""

from __future__ import annotations

from sdcompile.core.environment import collect_versions
from sdcompile.core.target.discovery import find_target
from sdcompile.core.target.naming import RegistrationNames
from sdcompile.core.target.registry import read_target_registry
from sdcompile.phases.register.results import RegisterResult
from sdcompile.phases.scaffold.facts import ScaffoldFacts, pair_facts
from sdcompile.workspace.store import Workspace

NOTHING_TO_REGISTER = ("reuse", "already fused")  # scaffold's decisions that leave phase 3 nothing to do


def decided_nothing(model: str, op: str, facts: ScaffoldFacts | None, workdir, named: bool) -> ScaffoldFacts | None:
    """Scaffold's facts (`facts`, else the pair's record) when they leave nothing to register and the command names
    nothing of its own to register (`named`: --flag/--group/--module or --undo); None otherwise."""
    if named:
        return None
    facts = facts or pair_facts(Workspace(workdir), model, op)
    return facts if facts is not None and facts.decision in NOTHING_TO_REGISTER else None


def nothing_to_register(repo, model: str, op: str, facts: ScaffoldFacts, dry_run: bool) -> RegisterResult:
    """Phase 3's result for a pair scaffold left nothing to register. A model file's label need not form names:
    the result carries the ones scaffold chose."""
    tree = find_target(repo)
    return RegisterResult(
        action="register", outcome="nothing to register", target_root=str(tree.root), target_version=tree.version,
        model=model, op=op, names=RegistrationNames(facts.flag, facts.group, facts.module, derived=False),
        pattern_file="", pattern_file_status="not needed", position=None,
        registry_size=len(read_target_registry(tree).entries), pieces=(), files=(), ordering=(), notes=(),
        dry_run=dry_run, written=False, workspace=None, versions=collect_versions(tree), skipped=facts.decision,
        reused=facts.covering)


def skipped_summary(result: RegisterResult) -> str:
    """Phase 3's line for a pair with nothing to register (the record's summary and the report's)."""
    if result.skipped == "reuse":
        return f"nothing to register: scaffold reused {', '.join(result.reused)}, already registered in the target"
    return "nothing to register: the model graph already calls the fused op at every site"
