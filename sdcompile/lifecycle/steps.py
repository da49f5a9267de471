"""One step per lifecycle phase, as `sdcompile run` drives them: which phase function it calls with what, what the
phase means in the pipeline (given what scaffold decided), its gate, and the commands to run when the gate fails.

Each phase function records its own outcome in the workspace; a step records only what it decides itself (register
skipped on reuse, a combined verify over several reused groups, a pipeline gate stricter than the phase's verdict).
What the steps share (the run's context, scaffold's facts, a step's outcome) is in sdcompile.lifecycle.context.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sdcompile.core.target.registry import GRAPH_ENTRIES, PATTERN_GROUP
from sdcompile.lifecycle.context import RunContext, Step
from sdcompile.lifecycle.profile_steps import copy_audit_step, integrate_step
from sdcompile.phases.analyze.phase import analyze
from sdcompile.phases.analyze.render import reason_text as analyze_words
from sdcompile.phases.analyze.render import site_phrase
from sdcompile.phases.choices import CARRIER_NAMES, Carrier, Decision
from sdcompile.phases.debug.phase import run_debug
from sdcompile.phases.register.decided import NOTHING_TO_REGISTER, skipped_summary
from sdcompile.phases.register.phase import register
from sdcompile.phases.register.render import backend_edit_command
from sdcompile.phases.scaffold.facts import ScaffoldFacts
from sdcompile.phases.scaffold.phase import scaffold
from sdcompile.phases.scaffold.render import reason_text
from sdcompile.phases.scaffold.results import Need
from sdcompile.phases.verify.phase import run_verify
from sdcompile.phases.verify.render import skipped_text
from sdcompile.util.command_line import CommandLine, SdcompileCommand

GATES = {
    "analyze": "the op is located in the model",
    "scaffold": "an existing group covers every site, the model fuses it itself, or a generated replacement hits "
                "every site",
    "register": "the generated group is in the target's three registration files (nothing to do on reuse)",
    "verify": "each group replaces its own search functions with numerics >= min cosine, and replaces in the model",
    "debug": "every site of the op matches a group (or already calls the fused op)",
    "integrate": "fused nodes in the model graph, fused kernel in and eager chain out of the profiles, compiled "
                 "output agrees with eager",
    "copy-audit": "copy-kernel inflation compile/eager <= --max-inflation (time on an NPU, count in CPU captures), "
                  "or no more copies than the same compile without the run's groups for the op (the excess is then "
                  "the compile's own, said so)",
}

# A dead end's way out, by the path the sites need: its guide (`sdcompile explain TOPIC`, docs/TOPIC.md) -> what
# the user writes by hand
HAND_WRITTEN = {"pattern-templates": "pattern", "graph-pattern-entry": "GraphPatternEntry",
                "custom-graph-pass": "custom graph pass"}


def _dead_end(decision: str, facts: ScaffoldFacts, path: str) -> str | None:
    """The guide to the hand-written way out when nothing sdcompile can generate covers the sites (running again
    only stops here again), else None: 'cannot generate' with no other path left to try."""
    if decision != Decision.CANNOT_GENERATE or (facts.rows_need_graph_pass and path == Carrier.REPLACEMENT) or \
            facts.other_math_only:  # no fused kernel computes the sites: nothing to write by hand either
        return None
    return {"graph-pass": "custom-graph-pass", "graph-entry": "graph-pattern-entry"}.get(path, "pattern-templates")


# ------------------------------------------------------------------------------------------------- 1 analyze
def analyze_step(ctx: RunContext) -> Step:
    opt = ctx.options
    result = analyze(opt.model, opt.model_file, opt.op, opt.dtype, opt.plain_cpu, ctx.ws.root, progress=ctx.say,
                     repo=None if opt.plain_cpu else ctx.tree.root, timeout=opt.timeout, build=opt.build)
    report = result.ops[0]
    if result.gate == "pass":
        impls = "; ".join(f"{i.name} ({site_phrase(i)}, {CARRIER_NAMES[i.decision.path]})" if not i.producer_only else
                          f"{i.name} ({site_phrase(i)})" for i in report.implementations)
        return Step("pass", f"{report.site_count} {report.title} site(s): {impls}")
    return Step("fail", f"no {report.title} in {result.label}",
                why=f"{result.label} runs no {report.title}: there is nothing to fuse ({analyze_words(report.note)})",
                next_commands=(ctx.commands.analyze("all", comment="which primitives the model does run"),))


# ------------------------------------------------------------------------------------------------ 2 scaffold
def scaffold_step(ctx: RunContext) -> Step:
    opt = ctx.options
    result = scaffold(opt.model, opt.model_file, opt.op, opt.dtype, opt.plain_cpu, opt.path, opt.name, ctx.repo,
                      ctx.ws.root, progress=ctx.say, dry_run=opt.dry_run, timeout=opt.timeout, build=opt.build)
    ctx.scaffold = facts = ScaffoldFacts.of(result)  # the typed result, in memory
    summary = f"{result.decision}: {reason_text(result.decision_reason)}"
    if result.gate == "pass":
        if facts.decision == Decision.GENERATE:
            summary += ("; would write " if opt.dry_run else "; wrote ") + ", ".join(facts.files)
        if opt.dry_run and result.backend_diff:
            ctx.previews.append(result.backend_diff)
        # nothing generated (a reuse, an op the model fuses itself): `info`, as scaffold records it and status shows
        return Step("info" if facts.decision in (Decision.REUSE, Decision.ALREADY_FUSED) else "pass", summary)
    cmds = ctx.commands
    if result.decision == Decision.NOTHING_LOCATED:
        nxt = (cmds.analyze("all", comment="which primitives the model does run"),)
    elif facts.other_math_only:
        nxt = ()  # the target has no fused kernel for this math: no debug run or pattern changes that
    else:
        nxt = [cmds.debug(comment="why the target's groups do not replace these sites, node by node")]
        if facts.rows_need_graph_pass and opt.path == Carrier.REPLACEMENT:
            nxt.append(cmds.run(path=Carrier.GRAPH_ENTRY, comment="a GraphPatternEntry matches the graph's own nodes"))
        if result.variants:
            nxt.append(cmds.scaffold(("--dry-run",), comment="the generated source and where it misses"))
        nxt = tuple(nxt)
    why = f"scaffold: {result.decision} — {reason_text(result.decision_reason)}" + refused_sites(result)
    if result.withheld:
        why += f"; {reason_text(result.withheld)}"
    dead_end = _dead_end(result.decision, facts, opt.path)
    if dead_end:
        guide = HAND_WRITTEN[dead_end]
        nxt += (str(SdcompileCommand("explain", (dead_end,), comment=f"how to write the {guide} by hand")),)
        why += (f"; a dead end: nothing sdcompile generates covers these sites, so running again stops here the same "
                f"way. The way out is by hand: write the {guide} in your MindIE-SD tree (docs/{dead_end}.md, "
                "`sdcompile explain " + dead_end + "`), then run on that tree with --repo")
    if facts.other_math_only:
        why += ("; a dead end: no fused kernel of this target computes these sites, so no pattern, generated or "
                "written by hand, can serve them")
    return Step("fail", summary, why=why, next_commands=nxt, dead_end=dead_end is not None or facts.other_math_only)


def refused_sites(result, shown: int = 4) -> str:
    """Each site scaffold could not generate for, with its own reason, where the decision's reason does not already
    give the one they share: some sites generated and these not (the gate wants every site), or none generated
    for reasons that differ site by site (which the decision's sentence only counts)."""
    per_site = result.decision == Decision.GENERATE or (
        result.decision == Decision.CANNOT_GENERATE and result.decision_reason.facts.get("why") is None)
    rows = [row for row in result.sites if row.need == Need.CANNOT]
    if not per_site or not rows:
        return ""
    dtypes = len({row.dtype for row in rows}) > 1
    stuck = list(dict.fromkeys(f"{f'{row.dtype} ' if dtypes else ''}{row.site or '(the model)'}: "
                               f"{reason_text(row.reason)}" for row in rows))
    more = f"; and {len(stuck) - shown} more (scaffold.json)" if len(stuck) > shown else ""
    lead = "; cannot generate " if result.decision == Decision.GENERATE else "; by site: "
    return lead + "; ".join(stuck[:shown]) + more


# ------------------------------------------------------------------------------------------------ 3 register
def register_step(ctx: RunContext) -> Step:
    opt = ctx.options
    facts = ctx.scaffold
    if facts.decision in NOTHING_TO_REGISTER:  # the phase says so and records it skipped
        result = register(ctx.repo, ctx.model_name, opt.op, dry_run=opt.dry_run, workdir=ctx.ws.root, decided=facts)
        return Step("skipped", skipped_summary(result))
    if opt.dry_run:
        return _register_preview(ctx, facts)

    result = register(ctx.repo, ctx.model_name, opt.op, flag=facts.flag, group=facts.group, module=facts.module,
                      workdir=ctx.ws.root)
    if result.backend_calls is not None:  # a custom graph pass: the backend's call switches it on
        return _graph_pass_called(result)
    if facts.generated_entries:
        summary = (f"{result.names.entries_function} as {facts.flag} (a GraphPatternEntry carrier, ahead of "
                   f"pattern_registry): {result.outcome}")
    else:
        summary = f"{facts.group} as {facts.flag} (#{result.position} of {result.registry_size}): {result.outcome}"
    if result.ordering:
        summary += "; " + "; ".join(f"should come before {v.registered_after}" for v in result.ordering)
    return Step("pass", summary)


def _register_preview(ctx: RunContext, facts: ScaffoldFacts) -> Step:
    """A dry run's phase 3: the edits register (and the backend edit a graph pass needs) would make, not made."""
    said = []
    if facts.generated_graph_pass:
        said.append(f"would need {ctx.tree.backend_file.name} to call {facts.graph_pass_class} in "
                    "graph_rewrite_after_freezing (the edit is shown below; sdcompile never makes it)")
    if facts.registers:
        result = register(ctx.repo, ctx.model_name, ctx.options.op, flag=facts.flag, group=facts.group,
                          module=facts.module, allow_missing=True, dry_run=True,
                          carrier_of_missing=GRAPH_ENTRIES if facts.generated_entries else PATTERN_GROUP)
        ctx.previews.extend(change.diff for change in result.files if change.diff)
        edited = [change.file for change in result.files if change.changed]
        where = ("ahead of pattern_registry" if facts.generated_entries
                 else f"#{result.position} of {result.registry_size}")
        what = result.names.entries_function if facts.generated_entries else facts.group
        said.append(f"would register {what} as {facts.flag} ({where}): would edit {', '.join(edited) or 'nothing'}")
    return Step("pass", "; ".join(said))


def _graph_pass_called(result) -> Step:
    """Phase 3 of a custom graph pass, as register checked and recorded it: the backend calls the pass or not."""

    backend, pass_class = "mindie_sd_backend.py", result.names.pass_class
    if result.backend_calls:
        return Step("pass", f"{backend} calls {pass_class} in graph_rewrite_after_freezing")
    why = (f"scaffold generated a custom graph pass ({pass_class}); it runs once {backend} calls it, an edit "
           "sdcompile shows but does not make")
    edit = backend_edit_command(result)
    return Step("fail", why, why=why, next_commands=(edit,) if edit else ())


# -------------------------------------------------------------------------------------------------- 4 verify
def verify_step(ctx: RunContext) -> Step:
    opt = ctx.options
    facts = ctx.scaffold
    # one report for all the pair's carriers (none when the model already calls the fused op), recorded by the phase
    report = run_verify(repo=ctx.repo, workdir=ctx.ws.root, group=ctx.groups_to_check(), model=opt.model,
                        model_file=opt.model_file, op=opt.op, dtype=opt.dtype, min_cosine=opt.min_cosine,
                        plain_cpu=opt.plain_cpu, progress=ctx.say, timeout=opt.timeout, build=opt.build,
                        decided=facts)
    if report.skipped:
        return Step("skipped", skipped_text(report))
    tested = [report.graph_pass] if report.graph_pass is not None else []  # a custom graph pass's test
    results = list(report.groups)
    passed = report.passed
    summary = "; ".join([*(f"{t.test_file}: {t.last_line}" for t in tested),
                         *(f"{g.group}: {g.summary}" for g in results)])
    if passed:
        return Step("pass", summary)
    if tested and not results:
        return Step("fail", summary, why=f"the graph pass test fails: {tested[0].last_line}",
                    next_commands=tuple(t.command for t in tested if not t.passed))
    failing = tuple(g.group for g in results if not g.passed)
    files = _numerics_only(results)
    if files:  # every failing pattern matched and computes something else: the fix is in its replacement
        return Step("fail", summary, why=f"verify: {summary}",
                    next_commands=tuple(ctx.commands.verify(g, comment=f"after fixing the replacement in {f}")
                                        for g, f in files.items()))
    return Step("fail", summary, why=f"verify: {summary}",
                next_commands=(ctx.commands.debug(failing, comment="where pattern and model graph part, node by "
                                                  "node"),))


def _numerics_only(results) -> dict[str, str]:
    """group -> pattern file, when every failing group fails only because a matched pattern's replacement differs
    from its search function (empty otherwise: debug is where to look)."""
    files = {}
    for g in (g for g in results if not g.passed):
        failing = [c for c in g.unit if not c.passed]
        if not failing or any(c.difference is None or c.difference.pattern_file is None for c in failing):
            return {}
        files[g.group] = failing[0].difference.pattern_file
    return files


# --------------------------------------------------------------------------------------------------- 5 debug
def debug_step(ctx: RunContext) -> Step:
    opt = ctx.options
    facts = ctx.scaffold
    if facts.generated_graph_pass or facts.generated_entries:
        carrier = "custom graph pass" if facts.generated_graph_pass else "GraphPatternEntry carrier"
        why = (f"debug aligns register_replacement patterns with the model graph; the {carrier} is the model graph's "
               "own nodes and phase 4 checked it at every site")
        ctx.record("debug", "skipped", why)
        return Step("skipped", why)

    groups = ctx.groups_to_check()
    if facts.generated_pattern:  # the sites scaffold found covered are the target's groups' to match, not this one's
        groups = (*facts.covering, *groups)
    result = run_debug(model=opt.model, model_file=opt.model_file, op=opt.op, groups=groups, dtype=opt.dtype,
                       plain_cpu=opt.plain_cpu, repo=ctx.repo, workdir=ctx.ws.root, progress=ctx.say,
                       timeout=opt.timeout, build=opt.build)
    if result.passed:
        return Step("pass", result.summary)
    types = sorted({g.mismatch_type for s in result.sites if s.verdict == "mismatch" for g in s.groups
                    if g.mismatch_type is not None})
    nxt = [ctx.commands.debug(groups, flags=("--patterns",),
                              comment="the aligned graphs and the patterns as registered")]
    nxt += [str(SdcompileCommand("explain", ("mismatch", t))) for t in types]
    if facts.generated_pattern and facts.file_of("pattern"):
        nxt.append(str(CommandLine("$EDITOR", (Path(ctx.repo) / facts.file_of("pattern"),),
                                   comment="fix the pattern (path A), then run again")))
    return Step("fail", result.summary, why=f"debug: {result.summary}", next_commands=tuple(nxt))


STEPS: dict[str, Callable[[RunContext], Step]] = {
    "analyze": analyze_step,
    "scaffold": scaffold_step,
    "register": register_step,
    "verify": verify_step,
    "debug": debug_step,
    "integrate": integrate_step,
    "copy-audit": copy_audit_step,
}
