"""Phase 2, `sdcompile scaffold`: reuse an existing pattern group, or generate a pattern (or a custom graph pass)
from the model's own graph, with its test.

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
   (catalogs/scaffold.toml). Path B writes a custom graph pass for graph_rewrite_after_freezing instead, and the
   backend edit that calls it as a diff.
5. Every generated source is compiled, imported as the target would import it, and run on the sites it came
   from (sdcompile.phases.scaffold.selfcheck); only sources that replace all their sites are written.
6. New files only, all or none; --dry-run shows diffs; existing files need --force. Phase 2 is recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sdcompile.core.environment import TargetEnvironment, environment_fields
from sdcompile.core.target.naming import RegistrationNames
from sdcompile.phases.scaffold.generate import TORCH_DTYPES, generate, plan_variants
from sdcompile.phases.scaffold.reuse import SiteCoverage
from sdcompile.phases.scaffold.selfcheck import SiteCheck
from sdcompile.util.errors import BadInput

OPS = ("rmsnorm", "rope", "adaln", "gelu")
PATHS = ("auto", "replacement", "graph-pass")

Progress = Callable[[str], None]


# ------------------------------------------------------------------------------------------- the result
@dataclass(frozen=True)
class PathChoice:
    implementation: str
    parameter_source: str  # from phase 1: "module attribute" | "function input"
    phase1_path: str  # phase 1's decision: "register_replacement" | "custom graph pass"
    requested: str  # --path
    path: str  # "replacement" | "graph-pass"
    why: str


@dataclass(frozen=True)
class GroupCoverage:
    group: str
    status: str
    replaced: int
    by: tuple[str, ...]
    left: tuple[str, ...]


@dataclass(frozen=True)
class SiteRow:
    dtype: str
    site: str
    implementation: str
    source: str
    nodes: int
    graph: int | None
    production: SiteCoverage  # every group the target enables by default, in registry order
    groups: tuple[GroupCoverage, ...]  # each group alone, where it replaced anything
    need: str  # covered | fused by the model | pattern | graph pass | not in the graph | cannot generate
    reason: str  # why `need`
    generated: str | None  # the pattern / chain generated for it
    check: SiteCheck | None  # the generated source run on this site
    graph_pass_can_match: bool = False  # refused as a pattern, but a custom graph pass can replace it


@dataclass(frozen=True)
class Variant:
    """One distinct subgraph: one pattern class (or graph-pass chain), one entry per dtype and constant."""

    path: str  # "replacement" | "graph-pass"
    name: str  # "FluxRmsNormPattern", "FluxRmsNormChain"
    factory: str  # "create"
    implementation: str
    source: str
    sites: tuple[str, ...]  # "bf16 transformer_blocks.0.attn.norm_q"
    entries: tuple[str, ...]  # "create(torch.bfloat16, epsilon=1e-06)"
    constants: tuple[str, ...]  # "epsilon: graph 9.999999974752427e-07 = float32(1e-06)"
    inputs: tuple[str, ...]  # "x [1, 24, 2, 16] torch.bfloat16 <- computed ..."
    chain: tuple[str, ...]  # the search function body / chain, one op per line
    replacement: str
    trimmed: tuple[str, ...] = ()  # edge ops left outside the pattern ("aten._to_copy.default on the output")


@dataclass(frozen=True)
class GeneratedFile:
    path: str  # relative to the target root
    kind: str
    status: str
    lines: int
    diff: str


@dataclass(frozen=True)
class ScaffoldResult(TargetEnvironment):
    model: str
    label: str
    op: str
    dtypes: tuple[str, ...]
    names: RegistrationNames
    phase1: str  # where the path decision came from
    paths: tuple[PathChoice, ...]
    production_groups: tuple[str, ...]
    errors: tuple[str, ...]  # groups that failed to register or match (they are skipped, not fatal)
    sites: tuple[SiteRow, ...]
    decision: str  # reuse | already fused | generate | nothing located | cannot generate
    decision_reason: str
    variants: tuple[Variant, ...]
    files: tuple[GeneratedFile, ...]
    backend_diff: str  # the mindie_sd_backend.py edit a graph pass needs ("" when none)
    dry_run: bool
    forced: bool
    written: bool
    gate: str  # "pass" | "fail"
    next_steps: tuple[str, ...]
    notes: tuple[str, ...]
    workspace: str | None = None
    withheld: str | None = None  # why nothing was written although sources were generated (None: not withheld)


# ------------------------------------------------------------------------------------------------ helpers
def _dtypes(text: str) -> tuple[str, ...]:
    from sdcompile.core.zoo.models import parse_dtype

    values = tuple(dict.fromkeys(parse_dtype(d) for d in str(text).split(",") if d.strip()))
    if not values:
        raise BadInput("--dtype is empty", "pass e.g. --dtype bf16 or --dtype bf16,fp32")
    return values


def _command(model, model_file, op, dtypes, plain_cpu, path, name) -> str:
    parts = ["sdcompile scaffold"]
    parts.append(f"--model {model}" if model else f"--model-file {model_file}")
    parts.append(f"--op {op}")
    parts.append(f"--dtype {','.join(dtypes)}")
    if plain_cpu:
        parts.append("--plain-cpu")
    if path != "auto":
        parts.append(f"--path {path}")
    if name:
        parts.append(f"--name {name}")
    return " ".join(parts)


def _phase1(ws, spec, model, model_file, op, dtype, device, plain_cpu, workdir, say) -> tuple[dict, str]:
    """implementation name -> phase 1's decision (dict), and where it came from."""
    import json

    path = ws.pair_dir(spec.name, op, create=False) / "analysis.json"
    doc = None
    if path.is_file():
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            doc = None
    if doc is None or doc.get("dtype") != dtype or doc.get("device") != device.label:
        from sdcompile.phases.analyze.phase import analyze

        say(f"phase 1 (analyze {spec.name} --op {op}, {dtype}) has not run for this device: running it")
        analyze(model, model_file, op, dtype, plain_cpu, workdir)
        doc = json.loads(path.read_text(encoding="utf-8"))
        where = f"{ws.relative(path)} (analyze ran first: no analysis for {dtype} on {device.label})"
    else:
        where = ws.relative(path)
    decisions = {impl["name"]: impl["decision"] for impl in doc["analysis"]["implementations"]}
    return decisions, where


def _choose_path(requested: str, implementation: str, decision: dict | None) -> PathChoice:
    if decision is None:
        return PathChoice(implementation, "unknown", "unknown", requested,
                          "graph-pass" if requested == "graph-pass" else "replacement",
                          "phase 1 did not report this implementation; "
                          + ("--path graph-pass" if requested == "graph-pass" else "register_replacement by default"))
    phase1 = decision["path"]
    auto = "graph-pass" if phase1 == "custom graph pass" else "replacement"
    if requested == "auto":
        why = (f"phase 1: parameter source {decision['parameter_source']} -> {phase1} in {decision['stage']}. "
               f"{decision['why']}")
        return PathChoice(implementation, decision["parameter_source"], phase1, requested, auto, why)
    chosen = requested
    why = f"--path {requested}" + ("" if chosen == auto else f" (phase 1 chose {phase1}: {decision['why']})")
    return PathChoice(implementation, decision["parameter_source"], phase1, requested, chosen, why)


def _reuse_runs(target, stages, say) -> tuple[dict, dict, list[str], list[str]]:
    """Per captured graph: the production run and one run per loaded group (each group registered once)."""
    from sdcompile.phases.scaffold.reuse import RegisteredGroups, production_groups

    production = production_groups(target)
    loaded = [g.group for g in target.groups if g.loaded]
    say(f"reuse check: registering {len(loaded)} groups through the target's PatternMatchPass")
    registered = {g: RegisteredGroups([(g, target.pattern_classes(g))], target.tree.root) for g in loaded}
    whole = RegisteredGroups.merged([registered[g] for g in production])
    prod_runs, group_runs, errors = {}, {}, []
    for stage in stages:
        say(f"reuse check on graph {stage.graph_index}: {len(production)} enabled groups, then {len(loaded)} alone")
        prod_runs[id(stage)] = whole.apply(stage.gm, "production")
        group_runs[id(stage)] = {g: registered[g].apply(stage.gm, g) for g in loaded}
        for run in [prod_runs[id(stage)], *group_runs[id(stage)].values()]:
            errors.extend(run.errors)
    return prod_runs, group_runs, production, list(dict.fromkeys(errors))


# ---------------------------------------------------------------------------------------------- the phase
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
) -> ScaffoldResult:
    """Everything `sdcompile scaffold` does; see the module docstring."""
    from sdcompile.core.npu.device import activate_for_command
    from sdcompile.core.target.naming import registration_names
    from sdcompile.core.zoo.models import resolve_model
    from sdcompile.workspace.store import Workspace

    say = progress or (lambda _text: None)
    op = op.strip().lower()
    if op not in OPS:
        raise BadInput(f"unknown op {op!r}", f"use one of {', '.join(OPS)}")
    if path not in PATHS:
        raise BadInput(f"unknown --path {path!r}", f"use one of {', '.join(PATHS)}")
    dtypes = _dtypes(dtype)
    spec = resolve_model(model, model_file)
    if name is None and spec.kind == "file":
        raise BadInput("--model-file needs --name: the <model> word of the pattern's names (enable_<model>_<op>)",
                       "pass e.g. --name mymodel")
    names = registration_names(name or spec.name, op)
    device = activate_for_command(plain_cpu)  # before anything imports diffusers

    import torch

    from sdcompile.core.graph.pattern_recipes import load_recipes
    from sdcompile.core.target.discovery import find_target
    from sdcompile.core.target.loader import load_target

    tree = find_target(repo)
    say(f"loading {tree.root} under {device.label}")
    target = load_target(tree, reload=True)  # the tree as it is now: a group registered since counts for reuse
    ws = Workspace(workdir)
    decisions, phase1 = _phase1(ws, spec, model, model_file, op, dtypes[0], device, plain_cpu, workdir, say)
    recipe = load_recipes().get(op)
    survey = _survey(target, spec, op, dtypes, device, say)
    choices, needy, provisional = _classify(survey, recipe, decisions, path, force)

    all_sites = [(dt, site) for dt, entries in survey.sites.items() for site, _, _ in entries]
    variants: list = []
    failed: dict[tuple[str, str], str] = {}
    graph_pass_can: set[tuple[str, str]] = set()
    findings: list[str] = []
    if needy and recipe is None:
        for dt, site, _ in needy:
            failed[(dt, site.path)] = (f"no replacement recipe for {op} in catalogs/scaffold.toml: the fused call and "
                                       "how the chain's inputs map onto it are not known")
    elif needy:
        variants, failed, findings, graph_pass_can = plan_variants(needy, recipe)

    # render, check, write
    provenance = _provenance(spec, op, dtypes, plain_cpu, path, name, model, model_file, survey.label, device,
                             torch.__version__, survey.diffusers_version)
    planned, checks, backend_diff, notes = [], {}, "", []
    written = False
    if variants:
        unwritten = [(dt, site) for dt, site, choice in needy
                     if (dt, site.path) in failed and choice.path == "graph-pass"]
        planned, checks, backend_diff, notes = generate(variants, recipe, names, name or spec.name, spec, op, device,
                                                         tree, target, provenance, say, unwritten)
    covered = {key: failed.pop(key) for key, check in checks.items() if key in failed and check.hit}
    checks_of_generated = {key: c for key, c in checks.items() if c.expected}
    decision, decision_reason = _decide(all_sites, provisional, needy, failed, force, op)
    from sdcompile.phases.scaffold.files import outcomes, refuse_overwrite, write_all

    results = outcomes(planned, dry_run, force)
    all_hit = bool(checks_of_generated) and all(c.hit for c in checks_of_generated.values())
    if planned and not all_hit and not dry_run:
        results = [_not_written(r) for r in results]
    elif planned and not dry_run:
        refuse_overwrite(results)
        say("writing the generated files")
        write_all(planned, tree)
        written = any(r.status in ("created", "overwritten") for r in results)

    site_rows = []
    for dt, site in all_sites:
        prod, alone, need, reason = provisional[(dt, site.path)]
        if (dt, site.path) in failed:
            need, reason = "cannot generate", failed[(dt, site.path)]
        elif (dt, site.path) in covered:
            by = ", ".join(checks[(dt, site.path)].by)
            need, reason = "graph pass", (f"replaced by {by}, generated from the other sites: the same chain runs "
                                          f"here, though this site's own nodes could not be written as one "
                                          f"({covered[(dt, site.path)]})")
        variant = next((v for v in variants for d, s, _ in v.members if d == dt and s is site), None)
        generated = None
        if variant is not None:
            chain = next(c for d, s, c in variant.members if d == dt and s is site)
            generated = variant.expected_name(dt, {c.name: c.spelled for c in chain.constants})
        site_rows.append(SiteRow(dt, site.path, site.implementation, site.source, len(site.before),
                                 site.graph_index, prod, alone, need, reason, generated,
                                 checks.get((dt, site.path)),
                                 need == "cannot generate" and (dt, site.path) in graph_pass_can))

    gate, withheld = "pass", None
    if decision in ("nothing located", "cannot generate") or failed or (planned and not all_hit):
        gate = "fail"
    if planned and not all_hit:
        missed = [f"{c.dtype} {c.site}" for c in checks_of_generated.values() if not c.hit]
        withheld = (f"nothing was written: the generated source does not replace {len(missed)} of the sites it "
                    f"came from ({', '.join(missed[:4])}{' ...' if len(missed) > 4 else ''})")
        notes.append(withheld)
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
        sites=tuple(site_rows),
        decision=decision,
        decision_reason=decision_reason,
        variants=tuple(_public_variant(v) for v in variants),
        files=tuple(GeneratedFile(r.path, r.kind, r.status, r.lines, r.diff) for r in results),
        backend_diff=backend_diff,
        dry_run=dry_run,
        forced=force,
        written=written,
        gate=gate,
        next_steps=_next_steps(decision, variants, name or spec.name, names.group, spec, op, plain_cpu, written,
                               dry_run, site_rows, tree, results),
        notes=tuple(findings) + tuple(notes) + _device_notes(device, op, site_rows),
        withheld=withheld,
    )
    if dry_run:
        return result
    return _record(result, ws, planned if written else [], backend_diff)


@dataclass
class _Survey:
    """Per dtype: every site of the op with the production run and the per-group runs on its graph."""

    sites: dict = field(default_factory=dict)  # dtype -> [(SiteGraph, production GroupRun, {group: GroupRun})]
    production: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    label: str = ""
    diffusers_version: str | None = None


def _survey(target, spec, op, dtypes, device, say) -> _Survey:
    from sdcompile.core.graph.capture import capture_graphs
    from sdcompile.core.target.loader import emulated_fused_op_targets
    from sdcompile.core.zoo.locate import locate
    from sdcompile.core.zoo.models import build_model
    from sdcompile.core.zoo.runtrace import trace_forward
    from sdcompile.phases.scaffold.sites import site_graphs

    rne, decomp = target.redundant_node_pass(), target.decomposition_table()
    fused_targets = emulated_fused_op_targets()
    survey = _Survey(label=spec.name)
    for dt in dtypes:
        say(f"building {spec.name} ({dt}) and locating its {op} sites")
        built = build_model(spec, dt)
        survey.label = built.label
        trace = trace_forward(built.module, built.inputs)
        located = locate(trace, type(built.module), (op,))[op]
        say(f"compiling {spec.name} ({dt}) as MindieSDBackend does")
        capture = capture_graphs(built.module, built.inputs, model=built.name, dtype=dt, device=device.label,
                                 redundant_node_elimination=rne,
                                 redundant_node_elimination_name=target.REDUNDANT_NODE_PASS_NAME,
                                 decompositions=decomp)
        survey.diffusers_version = capture.metadata.diffusers_version
        sites = site_graphs(located, trace.lines, capture, fused_targets)
        stages = list({id(s.before_stage): s.before_stage for s in sites if s.before_stage is not None}.values())
        prod_runs, group_runs, survey.production, errors = _reuse_runs(target, stages, say)
        survey.errors.extend(e for e in errors if e not in survey.errors)
        survey.sites[dt] = [(site, prod_runs.get(id(site.before_stage)), group_runs.get(id(site.before_stage), {}))
                            for site in sites]
    return survey


def _classify(survey: _Survey, recipe, decisions, path, force):
    """What each site needs: (path choices, sites needing generation, {(dtype, site): (production coverage,
    groups alone, need, reason)})."""
    from sdcompile.phases.scaffold.reuse import coverage

    key_ops = recipe.chain_ops if recipe else ()
    choices: dict[str, PathChoice] = {}
    needy: list[tuple[str, Any, PathChoice]] = []
    provisional: dict[tuple[str, str], tuple] = {}
    for dt, entries in survey.sites.items():
        for site, prod_run, by_group in entries:
            impl = site.implementation
            if impl not in choices:
                choices[impl] = _choose_path(path, impl, decisions.get(impl))
            prod = coverage(prod_run or _empty_run(), site, key_ops)
            alone = tuple(GroupCoverage(g, c.status, c.replaced, c.by, c.left)
                          for g, run in by_group.items() if (c := coverage(run, site, key_ops)).replaced)
            if prod.status == "not in the graph":
                need, reason = "not in the graph", site.problem or "no nodes"
            elif prod.status == "fused by the model":
                need = "fused by the model"
                reason = (f"the model graph already calls {', '.join(site.fused_ops)} here (diffusers' own NPU "
                          "branch): nothing to replace")
            elif site.problem:
                need, reason = "cannot generate", site.problem
            elif prod.status == "replaced" and not force:
                need, reason = "covered", "see production"
            else:
                choice = choices[impl]
                need = "pattern" if choice.path == "replacement" else "graph pass"
                reason = "--force" if prod.status == "replaced" else f"{prod.status} by the enabled groups"
                needy.append((dt, site, choice))
            provisional[(dt, site.path)] = (prod, alone, need, reason)
    return choices, needy, provisional


def _empty_run():
    from sdcompile.phases.scaffold.reuse import GroupRun

    return GroupRun("production", (), (), frozenset(), ())


def _not_written(r):
    from sdcompile.phases.scaffold.files import FileOutcome

    return FileOutcome(r.path, r.kind, "not written (self-check failed)", r.lines, r.diff)


def _decide(all_sites, provisional, needy, failed, force, op) -> tuple[str, str]:
    if not all_sites:
        return "nothing located", f"no {op} ran in this model's forward (phase 1 found none)"
    needs = ["cannot generate" if (dt, s.path) in failed else provisional[(dt, s.path)][2] for dt, s in all_sites]
    counts = {n: needs.count(n) for n in dict.fromkeys(needs)}
    summary = ", ".join(f"{k} {n}" for n, k in counts.items())
    if not needy:
        if all(n == "fused by the model" for n in needs):
            return "already fused", f"every site already calls the fused op itself ({summary})"
        if all(n in ("covered", "fused by the model") for n in needs):
            return "reuse", f"the target's groups already replace every site ({summary}); nothing created " \
                            "(--force generates a pattern anyway)"
        return "cannot generate", f"no site can be generated for ({summary})"
    if failed and len(failed) == len(needy):
        reasons = set(failed.values())
        why = reasons.pop() if len(reasons) == 1 else "the reasons are per site"
        return "cannot generate", f"none of the {len(needy)} site(s) needing a replacement can be written as one: {why}"
    forced = " (--force)" if force and any(n == "pattern" or n == "graph pass" for n in needs) else ""
    return "generate", f"{len(needy) - len(failed)} site(s) get a generated replacement{forced} ({summary})"


def _provenance(spec, op, dtypes, plain_cpu, path, name, model, model_file, label, device, torch_version,
                diffusers_version):
    from sdcompile._version import __version__
    from sdcompile.phases.scaffold.sources import Provenance

    command = _command(model or (spec.name if spec.kind == "zoo" else None), model_file, op, dtypes, plain_cpu, path,
                       name)
    return Provenance(command, label, dtypes, device.label, torch_version, diffusers_version, __version__)


def _public_variant(v) -> Variant:
    from sdcompile.core.graph.pattern_recipes import replacement_expr

    chain = v.chain
    constants = tuple(
        f"{c.name}: the graph holds {c.graph_value!r}"
        + (f" = float32({c.spelled})" if c.fp32_rounded else " (the Python float, unrounded)")
        for c in chain.constants
    )
    inputs = tuple(f"{i.role} {list(i.shape)} {i.dtype} <- {i.origin}" for i in chain.inputs)
    try:
        replacement = replacement_expr(v.recipe, chain)
    except Exception as exc:  # noqa: BLE001 - shown, the check reports the failure
        replacement = f"<{exc}>"
    sites = tuple(f"{dt} {s.path}" for dt, s, _ in v.members)
    entries = tuple(
        f"{v.factory}({TORCH_DTYPES[dt]}" + "".join(f", {k}={val}" for k, val in consts.items()) + ")"
        for dt, consts in v.entries)
    return Variant(v.path, v.name, v.factory, v.implementation, v.source, sites, entries, constants, inputs,
                   tuple(chain.search_body), replacement, tuple(v.trimmed))


def _next_steps(decision, variants, word, word_group, spec, op, plain_cpu, written, dry_run, rows, tree,
                results) -> tuple:
    model_arg = f"--model {spec.name}" if spec.kind == "zoo" else f"--model-file {spec.path}:{spec.factory}"
    device = " --plain-cpu" if plain_cpu else ""
    plugin_device = " --sdcompile-device plain-cpu" if plain_cpu else ""
    steps = []
    if decision == "reuse":
        groups = sorted({g for r in rows for g in r.production.groups})
        for g in groups:
            steps.append(f"sdcompile verify {model_arg} --group {g}{device}   # numerics of the group that covers "
                         "the sites")
        steps.append(f"sdcompile scaffold {model_arg} --op {op}{device} --force   # generate a pattern anyway")
    elif decision == "cannot generate" and any(r.graph_pass_can_match for r in rows):
        steps.append(f"sdcompile scaffold {model_arg} --op {op}{device} --path graph-pass   # a custom pass matches "
                     "the graph's own nodes")
    elif decision == "cannot generate":
        steps.append(f"sdcompile debug {model_arg} --op {op}{device}   # why the target's own {op} groups miss "
                     "these sites, and the fix for each")
    elif decision == "already fused":
        steps.append(f"sdcompile scaffold {model_arg} --op {op} --plain-cpu   # the chain a process without "
                     "torch_npu traces")
    elif variants and (written or dry_run):
        prefix = "(after writing) " if dry_run else ""
        if any(v.path == "replacement" for v in variants):
            steps.append(f"{prefix}sdcompile register --model {word} --op {op}")
            group = "" if spec.kind == "zoo" else f" --group {word_group}"
            steps.append(f"{prefix}sdcompile verify {model_arg} --op {op}{group}{device}")
            test = next(r.path for r in results if r.kind == "pattern test")
            steps.append(f"{prefix}cd {tree.root} && pytest -p sdcompile.testing.pytest_plugin{plugin_device} {test}")
        if any(v.path == "graph-pass" for v in variants):
            steps.append(f"{prefix}cd {tree.root} && git apply <workspace>/{spec.name}/{op}/scaffold/backend.diff   "
                         "# or patch -p1")
            test = next(r.path for r in results if r.kind == "graph pass test")
            steps.append(f"{prefix}cd {tree.root} && pytest -p sdcompile.testing.pytest_plugin{plugin_device} {test}")
    return tuple(steps)


def _device_notes(device, op, rows) -> tuple[str, ...]:
    notes = []
    left = sorted({op_left for r in rows if r.need == "covered" for op_left in r.production.left})
    if left:
        notes.append(f"the covering group(s) leave {', '.join(left)} at each site around the fused op (kernels that "
                     "stay on the NPU); a register_replacement pattern cannot absorb what registration rewrites, a "
                     "custom graph pass can: --path graph-pass --force")
    fused = [r for r in rows if r.need == "fused by the model"]
    if fused and device.model_sees_npu:
        notes.append(f"{len(fused)} {op} site(s) already call the fused op because diffusers sees torch_npu "
                     f"({device.label}); that is what an NPU host runs, so they need no pattern. --plain-cpu shows "
                     "the chain a process without torch_npu traces.")
    if device.mode == "plain-cpu":
        notes.append("--plain-cpu: the graphs are those of a process without torch_npu (diffusers takes no NPU "
                     "branch); on an NPU host diffusers' own NPU branches may replace these chains before any "
                     "pattern sees them")
    return tuple(notes)


def _record(result: ScaffoldResult, ws, planned, backend_diff: str) -> ScaffoldResult:
    """Record phase 2 for the pair, with the result, the generated sources and the backend edit as evidence."""
    from dataclasses import replace

    from sdcompile.util.fsutil import atomic_write_text
    from sdcompile.util.serialize import dumps

    folder = ws.pair_dir(result.model, result.op) / "scaffold"
    result = replace(result, workspace=str(folder))
    evidence = [folder / "scaffold.json"]
    for stale in (folder / "backend.diff",):
        stale.unlink(missing_ok=True)
    if backend_diff:
        atomic_write_text(folder / "backend.diff", backend_diff)
        evidence.append(folder / "backend.diff")
    for f in planned:
        copy = folder / "generated" / Path(f.relative).name
        atomic_write_text(copy, f.text)
        evidence.append(copy)
    atomic_write_text(evidence[0], dumps(result) + "\n")
    verdict = {"reuse": "info", "already fused": "info", "generate": "pass"}.get(result.decision, "fail")
    if result.gate == "fail":
        verdict = "fail"
    summary = f"{result.decision}: {result.decision_reason}"
    if result.written:
        summary += "; wrote " + ", ".join(f.path for f in result.files if f.status in ("created", "overwritten"))
    ws.record(result.model, result.op, "scaffold", verdict, summary[:500], device=result.device, evidence=evidence)
    return result


__all__ = ["GeneratedFile", "GroupCoverage", "PathChoice", "ScaffoldResult", "SiteRow", "Variant", "scaffold"]
