"""Phase 2, `sdcompile scaffold`: reuse an existing pattern group, or generate a pattern (or a GraphPatternEntry
carrier) from the model's own graph, with its test.

1. Phase 1's analysis (the workspace's analysis.json; analyze runs first when it is missing or was made for
   another dtype or device) gives each implementation's parameter source and so its path.
2. The model is compiled the way MindieSDBackend does (the target's own redundant-node elimination and
   decomposition table) and each site of the op is found in the graph the pattern pass sees, and after freeze().
3. Reuse first: the target's groups run on copies of that graph (sdcompile.phases.scaffold.reuse) — all enabled groups
   in registry order (what compiling with the target as it ships does) and each group alone. Sites already
   replaced need nothing; sites where diffusers itself called a fused op (its NPU branch) need nothing either.
   Nothing is created when every site is covered, unless --force.
4. Each remaining site's chain is written as a search function (sdcompile.core.graph.pattern_codegen): one pattern per
   distinct subgraph, one group entry per dtype and constant; the replacement calls the recipe's fused op
   (its [recipe.*] in catalogs/ops/<op>.toml). Where no register_replacement pattern can hold a chain on this torch,
   the fusion's carrier is a GraphPatternEntry instead: the chain's own nodes as an inductor pattern, a handler
   inserting the fused call, a registration function passes/__init__.py calls under the fusion's flag. A custom graph
   pass (forbidden upstream) and the backend edit that calls it are written only on --path graph-pass.
5. Every generated source is compiled, imported as the target would import it, and run on the sites it came
   from (sdcompile.phases.scaffold.selfcheck); only sources that replace all their sites are written.
6. New files only, all or none; --dry-run shows diffs; existing files need --force. Phase 2 is recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sdcompile._version import __version__
from sdcompile.core.environment import environment_fields
from sdcompile.core.graph.chain_extent import chain_start
from sdcompile.core.graph.pattern_recipes import recipes_for
from sdcompile.core.npu.device import activate_for_command
from sdcompile.core.ops import OPS, op_title
from sdcompile.core.target.discovery import find_target
from sdcompile.core.target.loader import load_target
from sdcompile.core.target.naming import registration_names
from sdcompile.core.zoo.locate import locate
from sdcompile.core.zoo.model_step import ModelRequest
from sdcompile.core.zoo.models import parse_dtype
from sdcompile.phases.analyze.phase import analyze
from sdcompile.phases.choices import SCAFFOLD_PATHS as PATHS
from sdcompile.phases.choices import TABLE_PATHS, Carrier
from sdcompile.phases.pair_scope import PairKey, holds_pair, model_and_op
from sdcompile.phases.scaffold import outcome
from sdcompile.phases.scaffold.files import settle
from sdcompile.phases.scaffold.forms import SiteForms
from sdcompile.phases.scaffold.free_names import choose_names
from sdcompile.phases.scaffold.generate import Generated, generate
from sdcompile.phases.scaffold.next_steps import Invocation, next_steps
from sdcompile.phases.scaffold.path_choice import phase1_decisions
from sdcompile.phases.scaffold.production_form import ProductionStages
from sdcompile.phases.scaffold.record import record
from sdcompile.phases.scaffold.results import GeneratedFile, Need, ScaffoldResult, Why
from sdcompile.phases.scaffold.sources import Provenance
from sdcompile.phases.scaffold.survey import classify, take_survey
from sdcompile.phases.scaffold.variants import plan_variants
from sdcompile.util.choices import check_choice
from sdcompile.util.command_line import SdcompileCommand
from sdcompile.util.errors import BadInput
from sdcompile.util.reasons import Reason
from sdcompile.workspace.store import Workspace

Progress = Callable[[str], None]


def _checked_pair(arguments: dict) -> PairKey | None:
    """The pair scaffold writes, once its arguments pass the checks it makes anyway (nothing is made for bad input)."""
    a = arguments
    _checked_input(a["model"], a["model_file"], a["op"], a["dtype"], a["path"], a["name"], a["build"])
    return model_and_op(arguments)


@holds_pair(_checked_pair)
def scaffold(
    model: str | None = None,
    model_file: str | None = None,
    op: str = "rmsnorm",
    dtype: str = "bf16",
    plain_cpu: bool = False,
    path: str = "auto",
    name: str | None = None,
    repo: Path | str | None = None,
    workdir: Path | str | None = None,
    dry_run: bool = False,
    force: bool = False,
    progress: Progress | None = None,
    timeout: float | None = None,
    build=None,
) -> ScaffoldResult:
    """Everything `sdcompile scaffold` does; see the module docstring. `timeout`: seconds the model's build and each
    forward may take (None: $SDCOMPILE_TIMEOUT, else 600; 0: no limit)."""

    say = progress or (lambda _text: None)
    op, dtypes, request, names = _checked_input(model, model_file, op, dtype, path, name, build, timeout)
    spec = request.spec
    device = activate_for_command(plain_cpu)  # before anything imports diffusers

    import torch

    tree = find_target(repo)
    say(f"loading {tree.root} under {device.label}")
    target = load_target(tree, reload=True)  # the tree as it is now: a group registered since counts for reuse
    chosen = choose_names(tree, target.registry, name, spec.name, names, lambda word: registration_names(word, op))
    names, word = chosen.names, chosen.word
    ws = Workspace(workdir)
    analysis = ws.pair_dir(spec.name, op, create=False) / "analysis.json"

    def run_analyze():
        say(f"phase 1 (analyze {spec.name} --op {op}, {dtypes[0]}) has not run for this device and build: running it")
        analyze(model, model_file, op, dtypes[0], plain_cpu, workdir, timeout=timeout, build=spec.build)

    decisions, phase1_ran_first = phase1_decisions(
        analysis, {"dtype": dtypes[0], "device": device.label, "build": spec.build.fingerprint()}, run_analyze)
    phase1 = ws.relative(analysis)
    recipes, title = recipes_for(op), op_title(op)
    survey = take_survey(target, request, lambda trace, cls: locate(trace, cls, (op,))[op], dtypes, device, say,
                         chain_start(recipes), title)
    site_forms = SiteForms.of_recipes(recipes, survey.site_targets())
    choices, needy, provisional, taken = classify(survey, site_forms, decisions, path, force)
    flags = {g.group: g.flag for g in target.registry.groups}
    taken = {key: (names, tuple((g, flags.get(g)) for g in groups)) for key, (names, groups) in taken.items()}
    production = ProductionStages(survey.production_pass) if survey.production_pass is not None else None
    variants, failed, findings, graph_pass_can = _plan(needy, site_forms, op, taken, production)
    if path == "auto":
        needy, variants, graph_pass_can = _one_carrier(needy, choices, provisional, site_forms, variants, failed,
                                                       findings, graph_pass_can)

    # render, check, write
    provenance = _provenance(spec, op, dtypes, plain_cpu, path, name, model, model_file, survey.label, device,
                             torch.__version__, survey.diffusers_version)
    generated = Generated()
    if variants:
        unwritten = [(dt, site) for dt, site, choice in needy
                     if (dt, site.path) in failed and choice.path in TABLE_PATHS]
        generated = generate(variants, names, f" --model {word} --op {op}", spec, device, tree, target, provenance, say,
                             unwritten, survey.production_pass)
    planned, checks, backend_diff, notes = generated.planned, generated.checks, generated.backend_diff, generated.notes
    if chosen.renamed_from is not None and planned:
        held = chosen.renamed_from
        notes.insert(0, Reason.of(Why.BESIDE_TARGET_OWN, group=held.group, flag=held.flag, word=word,
                                  files=[f.relative for f in planned]))
    failed.update(generated.refused)  # the numerics gate's refusals: nothing is written for them
    variants = [v for v in variants if not any((dt, s.path) in generated.refused for dt, s, _ in v.members)]
    # sites whose own chain could not be written but which the generated pass replaces anyway
    covered = {key: failed.pop(key) for key, check in checks.items() if key in failed and check.hit}
    checks_of_generated = {key: c for key, c in checks.items() if c.expected}
    all_sites = survey.all_sites()
    decision, decision_reason = outcome.decide(all_sites, provisional, needy, failed, force, title)
    results, written = settle(planned, outcome.all_hit(checks_of_generated), dry_run, force, tree, say,
                              word)
    site_rows = outcome.site_rows(all_sites, provisional, failed, covered, checks, variants, graph_pass_can)
    gate, withheld = outcome.gate(decision, failed, planned, checks_of_generated)
    notes += [withheld] if withheld else []
    files = tuple(GeneratedFile(r.path, r.kind, r.status, r.lines, r.diff) for r in results)
    public_variants = tuple(outcome.public_variant(v) for v in variants)
    result = ScaffoldResult(
        **environment_fields(device, tree, target),
        model=spec.name,
        label=survey.label,
        op=op,
        dtypes=dtypes,
        names=names,
        phase1=phase1,
        paths=tuple(choices.values()),
        production_groups=tuple(survey.production),
        errors=tuple(survey.errors),
        sites=site_rows,
        decision=decision,
        decision_reason=decision_reason,
        variants=public_variants,
        files=files,
        backend_diff=backend_diff,
        dry_run=dry_run,
        forced=force,
        written=written,
        gate=gate,
        next_steps=next_steps(Invocation(spec.model_option, model_file, op, dtypes, plain_cpu, path, name, word,
                                         timeout, tree.repo_for_commands, Path(workdir) if workdir else None, tree.root,
                                         ws.pair_dir(spec.name, op, create=False),
                                         spec.name if spec.model_option else None, spec.build.options()),
                              decision, public_variants, files, site_rows, names, written, dry_run),
        notes=tuple(findings) + tuple(notes) + _device_notes(device, op, site_rows),
        withheld=withheld,
        phase1_ran_first=phase1_ran_first,
        numerics=tuple(outcome.numerics_check(r) for r in generated.gate_runs),
        shadowing_groups=generated.shadowing,
    )
    if dry_run:
        return result
    return record(result, ws, planned if written else [], backend_diff)


def _checked_input(model, model_file, op: str, dtype: str, path: str, name: str | None, build=None, timeout=None):
    """(op, dtypes, the model request, registration names) from the arguments; BadInput before anything heavy."""

    op = check_choice(op, OPS, "op")
    path = check_choice(path, PATHS, "--path")
    dtypes = _dtypes(dtype)
    request = ModelRequest(model, model_file, build, dtypes[0], timeout)
    return op, dtypes, request, registration_names(request.pattern_word(name), op)


def _dtypes(text: str) -> tuple[str, ...]:
    values = tuple(dict.fromkeys(parse_dtype(d) for d in str(text).split(",") if d.strip()))
    if not values:
        raise BadInput("--dtype is empty", "pass e.g. --dtype bf16 or --dtype bf16,fp32")
    return values


def _plan(needy, site_forms, op, taken, production):
    """(variants, refused sites with why, findings, refused sites a graph pass can replace) for the needy sites;
    `taken`: the nodes of each site the production groups replace before a graph pass runs; `production`: the
    after-freezing graphs as they leave them."""

    if needy and not site_forms.forms:
        return [], {(dt, site.path): Reason.of(Why.NO_RECIPE, op=op) for dt, site, _ in needy}, [], set()
    if needy:
        return plan_variants(needy, site_forms, taken, production)
    return [], {}, [], set()


def _one_carrier(needy, choices, provisional, site_forms, variants, failed, findings, entry_can):
    """--path auto, per site and on this torch: a register_replacement pattern where one holds the chain, else a
    GraphPatternEntry written from the graph's own nodes. One fusion has one carrier (one file, one flag): when
    some site needs an entry, every site goes to the entries, which serve any chain a pattern serves. Updates
    `choices`, `provisional`, `failed` and `findings`; returns (needy, variants, sites an entry could replace)."""
    from dataclasses import replace

    if not entry_can:
        return needy, variants, entry_can
    why_of = {key: Reason.of(Why.AUTO_ENTRY, refusal=failed[key]) for key in entry_can}
    for v in (v for v in variants if v.path == Carrier.REPLACEMENT):
        for dt, site, _chain in v.members:
            why_of[(dt, site.path)] = Reason.of(Why.ONE_CARRIER)
    moved = [(dt, site, choice) for dt, site, choice in needy if (dt, site.path) in why_of]
    for dt, site, choice in moved:
        if choices[site.implementation].path != Carrier.GRAPH_ENTRY:
            choices[site.implementation] = replace(choice, path=Carrier.GRAPH_ENTRY, why=why_of[(dt, site.path)])
        failed.pop((dt, site.path), None)
        prod, alone, _need, reason = provisional[(dt, site.path)]
        provisional[(dt, site.path)] = (prod, alone, Need.GRAPH_ENTRY, reason)
    again = [(dt, site, choices[site.implementation]) for dt, site, _choice in moved]
    more, refused, more_findings, still_can = plan_variants(again, site_forms)
    failed.update(refused)
    findings += [f for f in more_findings if f not in findings]
    keys = set(why_of)
    needy = [entry for entry in needy if (entry[0], entry[1].path) not in keys] + again
    return needy, [v for v in variants if v.path != Carrier.REPLACEMENT] + more, (entry_can - keys) | still_can


def _device_notes(device, op: str, rows) -> tuple[Reason, ...]:
    """Notes on what the covering groups leave, diffusers' own NPU branch, and --plain-cpu."""
    notes = []
    left = sorted({op_left for r in rows if r.need == Need.COVERED for op_left in r.production.left})
    if left:
        notes.append(Reason.of(Why.COVERING_LEAVES, ops=left))
    fused = [r for r in rows if r.need == Need.FUSED]
    if fused and device.model_sees_npu:
        notes.append(Reason.of(Why.FUSED_BY_DIFFUSERS, sites=len(fused), op=op, device=device.label))
    if device.mode == "plain-cpu":
        notes.append(Reason.of(Why.PLAIN_CPU))
    return tuple(notes)


def _command(model, model_file, op, dtypes, plain_cpu, path, name, build=()) -> str:
    """The scaffold command as run, for the header of what it generates."""

    return SdcompileCommand("scaffold", model=model, model_file=None if model else model_file, build=tuple(build),
                            op=op, name=name, dtype=",".join(dtypes), plain_cpu=plain_cpu,
                            path=None if path == "auto" else path).text(comment=False)


def _provenance(spec, op, dtypes, plain_cpu, path, name, model, model_file, label, device, torch_version,
                diffusers_version):

    command = _command(model or spec.model_option, model_file, op, dtypes, plain_cpu, path,
                       name, spec.build.options())
    return Provenance(command, label, dtypes, device.label, torch_version, diffusers_version, __version__)


__all__ = ["scaffold"]
