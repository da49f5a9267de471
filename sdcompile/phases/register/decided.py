"""Phase 3 when scaffold decided there is nothing to register: it reused groups the target already registers, or
the model graph already calls the fused op (diffusers' own NPU branch). register says so and records the phase as
skipped, from `run` and from the command alike, instead of looking for a pattern file that was never written.
Where scaffold ended in a dead end (no site located, or none it could write a pattern for), register names that
instead of asking for the file scaffold never wrote."""

from __future__ import annotations

from pathlib import Path

from sdcompile.core.environment import collect_versions
from sdcompile.core.target.discovery import find_target
from sdcompile.core.target.naming import RegistrationNames
from sdcompile.core.target.registry import read_target_registry
from sdcompile.phases.choices import Decision
from sdcompile.phases.register.results import RegisterResult
from sdcompile.phases.scaffold.facts import ScaffoldFacts, pair_facts
from sdcompile.util.command_line import SdcompileCommand
from sdcompile.util.errors import BadInput
from sdcompile.workspace.store import Workspace

NOTHING_TO_REGISTER = (Decision.REUSE, Decision.ALREADY_FUSED)  # scaffold's decisions that leave phase 3 nothing to do


def decided_nothing(model: str, op: str, facts: ScaffoldFacts | None, workdir, named: bool,
                    repo=None) -> ScaffoldFacts | None:
    """Scaffold's facts (`facts`, else the pair's record) when they leave nothing to register and the command names
    nothing of its own to register (`named`: --flag/--group/--module or --undo); None otherwise. A scaffold that
    ended in a dead end is BadInput saying so (the command to see why carries `repo` and `workdir`)."""
    if named:
        return None
    facts = facts or pair_facts(Workspace(workdir), model, op)
    if facts is not None and facts.decision in DEAD_ENDS:
        raise _dead_end(model, op, facts.decision, repo, workdir)
    return facts if facts is not None and facts.decision in NOTHING_TO_REGISTER else None


# scaffold's decisions that wrote nothing for register to register: what it found, and where the reasons are
DEAD_ENDS = {
    Decision.NOTHING_LOCATED: "found no {op} site in {model}",
    Decision.CANNOT_GENERATE: "could write a pattern for none of {model}'s {op} sites",
}


def _dead_end(model: str, op: str, decision: str, repo, workdir) -> BadInput:
    scaffold = SdcompileCommand("scaffold", model=model, op=op, repo=Path(repo) if repo else None,
                                workdir=Path(workdir) if workdir else None).text(comment=False)
    return BadInput(f"nothing to register: scaffold {DEAD_ENDS[decision].format(model=model, op=op)} (its record "
                    f"says {decision!r})",
                    f"`{scaffold}` says why; to register a hand-written group, name it (--group, --module)")


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
    if result.skipped == Decision.REUSE:
        return f"nothing to register: scaffold reused {', '.join(result.reused)}, already registered in the target"
    return "nothing to register: the model graph already calls the fused op at every site"
