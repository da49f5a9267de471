"""Phase 2, `sdcompile scaffold`: reuse an existing pattern group, or generate a pattern (or a custom graph pass)
from the model's own graph, with its test.

1. Phase 1's analysis (the workspace's analysis.json; analyze runs first when it is missing or was made for
   another dtype or device) gives each implementation's parameter source and so its path.
2. The model is compiled the way MindieSDBackend does (the target's own redundant-node elimination and
   decomposition table) and each site of the op is found in the graph the pattern pass sees, and after freeze().
3. Reuse first: the target's groups run on copies of that graph (sdcompile.scaffold.reuse) — all enabled groups
   in registry order (what compiling with the target as it ships does) and each group alone. Sites already
   replaced need nothing; sites where diffusers itself called a fused op (its NPU branch) need nothing either.
   Nothing is created when every site is covered, unless --force.
4. Each remaining site's chain is written as a search function (sdcompile.graph.pattern_codegen): one pattern per
   distinct subgraph, one group entry per dtype and constant; the replacement calls the recipe's fused op
   (catalogs/scaffold.toml). Path B writes a custom graph pass for graph_rewrite_after_freezing instead, and the
   backend edit that calls it as a diff.
5. Every generated source is compiled, imported as the target would import it, and run on the sites it came
   from (sdcompile.scaffold.selfcheck); only sources that replace all their sites are written.
6. New files only, all or none; --dry-run shows diffs; existing files need --force. Phase 2 is recorded.
"""

from __future__ import annotations

import platform
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sdcompile.errors import BadInput
from sdcompile.scaffold.reuse import SiteCoverage
from sdcompile.scaffold.selfcheck import SiteCheck
from sdcompile.target.naming import RegistrationNames

OPS = ("rmsnorm", "rope", "adaln", "gelu")
PATHS = ("auto", "replacement", "graph-pass")
TORCH_DTYPES = {"bf16": "torch.bfloat16", "fp16": "torch.float16", "fp32": "torch.float32"}

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
class ScaffoldResult:
    model: str
    label: str
    op: str
    dtypes: tuple[str, ...]
    device: str
    device_reason: str
    torch_version: str
    diffusers_version: str | None
    python: str
    target: str
    target_version: str
    target_package: str
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


# ------------------------------------------------------------------------------------------ internal plans
@dataclass
class _Variant:
    path: str
    signature: tuple
    chain: Any  # pattern_codegen.Chain of the first site
    recipe: Any
    implementation: str
    source: str
    members: list = field(default_factory=list)  # (dtype, SiteGraph, Chain)
    name: str = ""
    factory: str = ""
    class_name: str = ""
    summary: str = ""
    doc: list = field(default_factory=list)
    default_constants: dict = field(default_factory=dict)
    name_has_constants: bool = False
    entries: list = field(default_factory=list)  # (dtype name, {constant: spelled})
    chain_name_expr: str = ""
    trimmed: list = field(default_factory=list)  # edge ops left outside the pattern, and why

    def expected_name(self, dtype: str, constants: dict[str, str]) -> str:
        """What name() (or the chain's name) evaluates to for one entry, exactly as the generated f-string."""
        text = f"{self.name}-{TORCH_DTYPES[dtype]}"
        if self.name_has_constants:
            text += "".join(f"-{k}{float(v)!r}" for k, v in constants.items())
        return text


@dataclass
class _PatternPlan:
    title: str
    doc: list
    imports: tuple
    variants: list
    group: str
    group_entries: list


@dataclass
class _GraphPassPlan:
    title: str
    doc: list
    recipe: Any
    parameter_roles: list
    variants: list
    chain_entries: list
    pass_class: str


@dataclass
class _UnitSite:
    dtype: str
    site: str
    pattern: str
    shape: tuple
    input_dtype: str


@dataclass
class _TestPlan:
    model_spec: str
    traced_as_npu_host: bool
    test_file: str
    unit_sites: list
    group: str = ""
    pattern_file: str = ""
    register_args: str = ""
    fused_op: str = ""
    gone: dict = field(default_factory=dict)
    model_sites: dict = field(default_factory=dict)
    pass_class: str = ""
    pass_file: str = ""
    pass_module: str = ""
    backend_diff: str = ""
    model_chains: dict = field(default_factory=dict)


# ------------------------------------------------------------------------------------------------ helpers
def _dtypes(text: str) -> tuple[str, ...]:
    from sdcompile.zoo.models import parse_dtype

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
        from sdcompile.phases.analyze import analyze

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


def _target_parts():
    from sdcompile.scaffold.reuse import target_module

    rne = target_module("passes.redundant_node_elimination_pass").ReduandantNodeEliminationPass()
    decomp = target_module("_custom_decomposition").select_custom_decomp_table()
    return rne, decomp


def _reuse_runs(target, stages, say) -> tuple[dict, dict, list[str], list[str]]:
    """Per captured graph: the production run and one run per loaded group (each group registered once)."""
    from sdcompile.scaffold.reuse import RegisteredGroups, production_groups

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


def _module_attribute_roles(chain, stage) -> list[str]:
    roles = []
    for i in chain.inputs:
        origin = stage.origins.get(i.node) if stage is not None else None
        if origin is not None and origin.is_module_attribute:
            roles.append(i.role)
    return roles


def _replacement_targets(cls) -> set[str]:
    """Ops the replacement traces to (so the test knows which chain ops must be gone)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from sdcompile.graph.nodes import op_name

    gm = make_fx(cls.replacement, tracing_mode="fake")(*cls.inputs())
    return {op_name(n) for n in gm.graph.nodes if n.op == "call_function"}


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
    from sdcompile.npu.device import activate_for_command
    from sdcompile.target.naming import registration_names
    from sdcompile.workspace.store import Workspace
    from sdcompile.zoo.models import resolve_model

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

    from sdcompile.graph.pattern_codegen import load_recipes
    from sdcompile.target.discovery import find_target
    from sdcompile.target.loader import load_target

    tree = find_target(repo)
    say(f"loading {tree.root} under {device.label}")
    target = load_target(tree, reload=True)  # the tree as it is now: a group registered since counts for reuse
    ws = Workspace(workdir)
    decisions, phase1 = _phase1(ws, spec, model, model_file, op, dtypes[0], device, plain_cpu, workdir, say)
    recipe = load_recipes().get(op)
    survey = _survey(target, spec, op, dtypes, device, say)
    choices, needy, provisional = _classify(survey, recipe, decisions, path, force)

    all_sites = [(dt, site) for dt, entries in survey.sites.items() for site, _, _ in entries]
    variants: list[_Variant] = []
    failed: dict[tuple[str, str], str] = {}
    findings: list[str] = []
    if needy and recipe is None:
        for dt, site, _ in needy:
            failed[(dt, site.path)] = (f"no replacement recipe for {op} in catalogs/scaffold.toml: the fused call and "
                                       "how the chain's inputs map onto it are not known")
    elif needy:
        variants, failed, findings = _plan_variants(needy, recipe)

    decision, decision_reason = _decide(all_sites, provisional, needy, failed, force, op)

    # render, check, write
    provenance = _provenance(spec, op, dtypes, plain_cpu, path, name, model, model_file, survey.label, device,
                             torch.__version__, survey.diffusers_version)
    planned, checks, backend_diff, notes = [], {}, "", []
    written = False
    if variants:
        planned, checks, backend_diff, notes = _generate(variants, recipe, names, name or spec.name, spec, op, device,
                                                         tree, target, provenance, say)
    from sdcompile.scaffold.files import outcomes, refuse_overwrite, write_all

    results = outcomes(planned, dry_run, force)
    all_hit = bool(checks) and all(c.hit for c in checks.values())
    if planned and not all_hit and not dry_run:
        results = [_not_written(r) for r in results]
    elif planned and not dry_run:
        refuse_overwrite(results)
        say("writing the generated files")
        write_all(planned)
        written = any(r.status in ("created", "overwritten") for r in results)

    site_rows = []
    for dt, site in all_sites:
        prod, alone, need, reason = provisional[(dt, site.path)]
        if (dt, site.path) in failed:
            need, reason = "cannot generate", failed[(dt, site.path)]
        variant = next((v for v in variants for d, s, _ in v.members if d == dt and s is site), None)
        generated = None
        if variant is not None:
            chain = next(c for d, s, c in variant.members if d == dt and s is site)
            generated = variant.expected_name(dt, {c.name: c.spelled for c in chain.constants})
        site_rows.append(SiteRow(dt, site.path, site.implementation, site.source, len(site.before),
                                 site.graph_index, prod, alone, need, reason, generated,
                                 checks.get((dt, site.path))))

    gate = "pass"
    if decision in ("nothing located", "cannot generate") or failed or (planned and not all_hit):
        gate = "fail"
    if planned and not all_hit:
        missed = [f"{c.dtype} {c.site}" for c in checks.values() if not c.hit]
        notes.append(f"nothing was written: the generated source does not replace {len(missed)} of the sites it "
                     f"came from ({', '.join(missed[:4])}{' ...' if len(missed) > 4 else ''})")
    result = ScaffoldResult(
        model=spec.name,
        label=survey.label,
        op=op,
        dtypes=dtypes,
        device=device.label,
        device_reason=device.reason,
        torch_version=torch.__version__,
        diffusers_version=survey.diffusers_version,
        python=platform.python_version(),
        target=str(tree.root),
        target_version=tree.version,
        target_package=target.package_note,
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
    from sdcompile.graph.capture import capture_graphs
    from sdcompile.scaffold.sites import site_graphs
    from sdcompile.target.loader import emulated_fused_op_targets
    from sdcompile.zoo.locate import locate
    from sdcompile.zoo.models import build_model
    from sdcompile.zoo.runtrace import trace_forward

    rne, decomp = _target_parts()
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
                                 redundant_node_elimination_name="the target's ReduandantNodeEliminationPass",
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
    from sdcompile.scaffold.reuse import coverage

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
    from sdcompile.scaffold.reuse import GroupRun

    return GroupRun("production", (), (), frozenset(), ())


def _not_written(r):
    from sdcompile.scaffold.files import FileOutcome

    return FileOutcome(r.path, r.kind, "not written (self-check failed)", r.lines, r.diff)


def _decide(all_sites, provisional, needy, failed, force, op) -> tuple[str, str]:
    if not all_sites:
        return "nothing located", f"no {op} ran in this model's forward (phase 1 found none)"
    needs = [provisional[(dt, s.path)][2] for dt, s in all_sites]
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
        return "cannot generate", f"none of the {len(needy)} site(s) needing a replacement can be written as one " \
                                  f"({summary})"
    forced = " (--force)" if force and any(n == "pattern" or n == "graph pass" for n in needs) else ""
    return "generate", f"{len(needy) - len(failed)} site(s) get a generated replacement{forced} ({summary})"


def _plan_variants(needy, recipe) -> tuple[list[_Variant], dict, list[str]]:
    """Group the sites needing a replacement by distinct chain. Pattern chains are first registered as a probe:
    edge ops the registration rewrites are trimmed (registration_probe); a rewritten op inside the chain makes
    the site ungeneratable on this path."""
    from sdcompile.graph.pattern_codegen import ChainError, extract_chain, op_target_name
    from sdcompile.scaffold.registration_probe import probe, trim
    from sdcompile.scaffold.sites import input_origins
    from sdcompile.zoo.models import torch_dtype

    variants: list[_Variant] = []
    failed: dict[tuple[str, str], str] = {}
    findings: list[str] = []
    probes: dict[tuple, Any] = {}

    def probed(chain, dt):
        if chain.signature not in probes:
            probes[chain.signature] = probe(chain, torch_dtype(dt))
        return probes[chain.signature]

    for dt, site, choice in needy:
        nodes, stage = (site.before, site.before_stage) if choice.path == "replacement" else (
            site.after, site.after_stage)
        if not nodes:
            failed[(dt, site.path)] = "the site has no nodes after freeze()"
            continue
        trimmed: list[str] = []
        try:
            chain = extract_chain(nodes, recipe, torch_dtype(dt), input_origins(stage))
            if choice.path == "replacement":
                result = probed(chain, dt)
                if result.lost:
                    finding = (f"register_replacement on torch {_torch_version()} registers "
                               f"{', '.join(result.lost)} as {', '.join(result.gained) or 'nothing'} (it traces "
                               "search functions with inductor's decomposition table), while the graph MindieSDBackend "
                               "matches keeps it: a pattern containing it never matches")
                    if finding not in findings:
                        findings.append(finding)
                    kept, trimmed = trim(nodes, result.lost)
                    inner = sorted({t for n in kept if (t := op_target_name(n.target)) in result.lost})
                    if not inner:
                        chain = extract_chain(kept, recipe, torch_dtype(dt), input_origins(stage))
                        inner = list(probed(chain, dt).lost)
                    if inner:
                        raise ChainError(
                            f"{', '.join(inner)} sits inside the chain and register_replacement registers it as "
                            f"{', '.join(result.gained) or 'something else'}, so no pattern over this chain can "
                            "match on this torch; --path graph-pass matches the graph's own nodes")
        except ChainError as exc:
            failed[(dt, site.path)] = str(exc)
            continue
        key = (choice.path, chain.signature)
        variant = next((v for v in variants if (v.path, v.signature) == key), None)
        if variant is None:
            variant = _Variant(choice.path, chain.signature, chain, recipe, site.implementation, site.source)
            variant.trimmed = list(trimmed)
            variants.append(variant)
        variant.members.append((dt, site, chain))
    return variants, failed, findings


def _torch_version() -> str:
    import torch

    return torch.__version__.split("+")[0]


def _provenance(spec, op, dtypes, plain_cpu, path, name, model, model_file, label, device, torch_version,
                diffusers_version):
    from sdcompile import __version__
    from sdcompile.scaffold.render import Provenance

    command = _command(model or (spec.name if spec.kind == "zoo" else None), model_file, op, dtypes, plain_cpu, path,
                       name)
    return Provenance(command, label, dtypes, device.label, torch_version, diffusers_version, __version__)


def _name_variants(variants: list[_Variant], camel: str) -> None:
    by_path: dict[str, list[_Variant]] = {}
    for v in variants:
        by_path.setdefault(v.path, []).append(v)
    for path, group in by_path.items():
        for k, v in enumerate(group, start=1):
            suffix = str(k) if len(group) > 1 else ""
            if path == "replacement":
                v.class_name = v.name = f"{camel}Pattern{suffix}"
                v.factory = f"create_{k}" if suffix else "create"
            else:
                v.name = f"{camel}Chain{suffix}"
                v.factory = f"create_chain_{k}" if suffix else "create_chain"
            entries = []
            for dt, _site, chain in v.members:
                entry = (dt, {c.name: c.spelled for c in chain.constants})
                if entry not in entries:
                    entries.append(entry)
            v.entries = entries
            v.default_constants = dict(entries[0][1])
            per_dtype = [dt for dt, _ in entries]
            v.name_has_constants = len(per_dtype) != len(set(per_dtype))
            dts = ", ".join(dict.fromkeys(dt for dt, _, _ in v.members))
            sites = [f"{s.path}" for dt, s, _ in v.members if dt == v.members[0][0]]
            impls = list(dict.fromkeys(s.implementation for _, s, _ in v.members))
            sources = list(dict.fromkeys(f"{s.implementation}: {s.source}" for _, s, _ in v.members))
            v.implementation = ", ".join(impls)
            v.summary = f"{v.implementation} at {len(v.members)} site(s) ({dts})"
            v.doc = [f"Source: {'; '.join(sources)}.", "",
                     f"Sites ({v.members[0][0]}): {', '.join(sites)}."]
            if v.trimmed:
                v.doc += ["", f"Left outside the pattern, in the graph around the fused op: {'; '.join(v.trimmed)}. "
                          "register_replacement registers that op differently from how the model graph holds it "
                          "(see `sdcompile scaffold`'s notes), so a pattern containing it would never match."]
            if v.path == "graph-pass":
                suffix_expr = "".join(f"-{c}{{{c}}}" for c in v.default_constants) if v.name_has_constants else ""
                v.chain_name_expr = f'f"{v.name}-{{dtype}}{suffix_expr}"'


def _generate(variants, recipe, names, word, spec, op, device, tree, target, provenance, say):
    """Render, check and plan every generated file. Returns (planned files, site checks, backend diff, notes)."""
    from sdcompile.scaffold.files import PlannedFile

    camel = names.group[: -len("PatternGroup")]
    _name_variants(variants, camel)
    planned, checks, notes = [], {}, []
    backend_diff = ""
    model_spec = repr({"model": spec.name} if spec.kind == "zoo" else {"model_file": f"{spec.path}:{spec.factory}"})
    pattern_variants = [v for v in variants if v.path == "replacement"]
    pass_variants = [v for v in variants if v.path == "graph-pass"]
    register_args = f" --model {word} --op {op}"
    if pattern_variants:
        say("rendering the pattern and checking it on its sites")
        text, module_checks, gone, model_sites = _pattern_file(pattern_variants, recipe, names, camel, provenance,
                                                               target)
        checks.update(module_checks)
        pattern_rel = str((tree.patterns_dir / names.pattern_filename).relative_to(tree.root))
        planned.append(PlannedFile(tree.patterns_dir / names.pattern_filename, pattern_rel, "pattern", text))
        test_rel = f"tests/compilation/patterns/test_{names.module}.py"
        test_plan = _TestPlan(model_spec, device.model_sees_npu, test_rel, _unit_sites(pattern_variants, checks),
                              group=names.group, pattern_file=pattern_rel, register_args=register_args,
                              fused_op=recipe.graph_call.op, gone=gone, model_sites=model_sites)
        from sdcompile.scaffold.render import PATTERN_TEST_TEMPLATE, pattern_test_context, render

        test_text = render(PATTERN_TEST_TEMPLATE, pattern_test_context(test_plan, provenance))
        _syntax_check(test_text, test_rel)
        planned.append(PlannedFile(tree.root / test_rel, test_rel, "pattern test", test_text))
    if pass_variants:
        say("rendering the graph pass and checking it on its sites")
        module = names.module[: -len("_pattern")] + "_pass"
        pass_class = f"{camel}GraphPass"
        text, pass_checks, chains = _pass_file(pass_variants, recipe, camel, pass_class, module, provenance, target)
        checks.update(pass_checks)
        pass_rel = f"{tree.compilation.relative_to(tree.root)}/passes/{module}.py"
        planned.append(PlannedFile(tree.root / pass_rel, pass_rel, "graph pass", text))
        from sdcompile.scaffold.backend_edit import ensure_pass_call, unified_diff

        backend_rel = str(tree.backend_file.relative_to(tree.root))
        old = tree.backend_file.read_bytes()
        comment = "\n".join(textwrap.wrap(
            f"{camel}: custom graph pass generated by `{provenance.command}`. It runs after freeze(), where a "
            "parameter can be a get_attr constant that a register_replacement pattern cannot bind.", 96))
        new = ensure_pass_call(old, module, pass_class, comment, backend_rel)
        backend_diff = unified_diff(old, new, backend_rel)
        if not backend_diff:
            notes.append(f"{backend_rel} already calls {pass_class}: no backend edit needed")
        test_rel = f"tests/compilation/passes/test_{module}.py"
        test_plan = _TestPlan(model_spec, device.model_sees_npu, test_rel,
                              _unit_sites(pass_variants, checks), pass_class=pass_class, pass_file=pass_rel,
                              pass_module=f"mindiesd.compilation.passes.{module}",
                              backend_diff="scaffold/backend.diff in the workspace", model_chains=chains)
        from sdcompile.scaffold.render import GRAPH_PASS_TEST_TEMPLATE, graph_pass_test_context, render

        test_text = render(GRAPH_PASS_TEST_TEMPLATE, graph_pass_test_context(test_plan, provenance))
        _syntax_check(test_text, test_rel)
        planned.append(PlannedFile(tree.root / test_rel, test_rel, "graph pass test", test_text))
    return planned, checks, backend_diff, notes


def _syntax_check(text: str, where: str) -> None:
    try:
        compile(text, where, "exec")
    except SyntaxError as exc:  # a template bug, never the user's input
        raise RuntimeError(f"generated {where} does not compile: {exc}") from exc


def _site_inputs(nodes, stage) -> list:
    """The values entering a site's nodes that are not module attributes: what the site module is called with."""
    members = set(nodes)
    found = []
    for node in nodes:
        for arg in node.all_input_nodes:
            origin = stage.origins.get(arg.name) if stage is not None else None
            if arg not in members and arg not in found and not (origin and origin.is_module_attribute):
                found.append(arg)
    return found


def _unit_sites(variants, checks) -> list[_UnitSite]:
    """Sites whose own module can be the unit model: a class implementation called with one tensor (the site's
    one input that is not a module attribute). The pattern named is the one the self-check saw replace it."""
    out = []
    for v in variants:
        for dt, site, _chain in v.members:
            nodes, stage = (site.before, site.before_stage) if v.path == "replacement" else (
                site.after, site.after_stage)
            free = _site_inputs(nodes, stage)
            check = checks.get((dt, site.path))
            if site.kind != "class" or len(free) != 1 or check is None or len(check.by) != 1:
                continue
            val = free[0].meta["val"]
            out.append(_UnitSite(dt, site.path, check.by[0].split(": ", 1)[-1], tuple(val.shape), str(val.dtype)))
    return out


def _pattern_file(variants, recipe, names, camel, provenance, target):
    """Render the pattern module, import it as the target would and run its group on the sites."""
    from sdcompile.graph.nodes import module_path
    from sdcompile.scaffold.render import PATTERN_TEMPLATE, pattern_context, render
    from sdcompile.scaffold.selfcheck import check_pattern_group, import_source

    entries = []
    for v in variants:
        for dt, constants in v.entries:
            args = "".join(f", {k}={val}" for k, val in constants.items())
            entries.append(f"{v.factory}({TORCH_DTYPES[dt]}{args})")
    sources = "; ".join(dict.fromkeys(f"{s.implementation} ({s.source})" for v in variants for _, s, _ in v.members))
    plan = _PatternPlan(
        title=f"{camel}: {recipe.title} fusion generated from the model's own ATen graph.",
        doc=[
            f"The search functions are the model's {recipe.title} subgraphs as MindIE-SD's pattern pass sees them "
            "(before freezing), written from the graph: the same aten op overloads, constants, casts and views, one "
            "pattern per distinct subgraph (edge ops the registration cannot represent are left outside; each "
            f"factory says which). The replacement calls {recipe.call.split('(')[0]} ({recipe.fused_op}).",
            "",
            f"Model source (the code phase 1 located): {sources}.",
        ],
        imports=recipe.imports,
        variants=variants,
        group=names.group,
        group_entries=entries,
    )
    text = render(PATTERN_TEMPLATE, pattern_context(plan, provenance))
    rel = f"patterns/{names.pattern_filename}"
    _syntax_check(text, rel)
    module = import_source(text, names.module, "patterns", str(target.tree.patterns_dir / names.pattern_filename))
    classes = list(getattr(module, names.group))
    checks, gone, model_sites = {}, {}, {}
    for v in variants:
        cls = next(c for c in classes if c.__name__ == v.class_name)
        gone[v.class_name] = tuple(sorted(set(v.chain.targets) - _replacement_targets(cls) - {"getitem"}))
    by_dtype: dict[str, list] = {}
    for v in variants:
        for dt, site, chain in v.members:
            by_dtype.setdefault(dt, []).append(
                (site, v.expected_name(dt, {c.name: c.spelled for c in chain.constants}), chain.nodes))
    for dt, sites in by_dtype.items():
        found, _ = check_pattern_group(names.group, classes, sites, dt, target.tree.root)
        for c in found:
            checks[(dt, c.site)] = c
        expected = {}
        for stage in {id(s.before_stage): s.before_stage for s, _, _ in sites}.values():
            from sdcompile.scaffold.reuse import run_groups

            run = run_groups(stage.gm, [(names.group, classes)], names.group, target.tree.root)
            for r in run.replacements:
                expected[module_path(stage.node(r.anchor)) or ""] = r.pattern
        model_sites[dt] = dict(sorted(expected.items()))
    return text, checks, gone, model_sites


def _pass_file(variants, recipe, camel, pass_class, module, provenance, target):
    from sdcompile.scaffold.render import GRAPH_PASS_TEMPLATE, graph_pass_context, render
    from sdcompile.scaffold.selfcheck import check_graph_pass, import_source

    entries, parameter_roles = [], []
    for v in variants:
        for dt, constants in v.entries:
            args = "".join(f", {k}={val}" for k, val in constants.items())
            entries.append(f"{v.factory}({TORCH_DTYPES[dt]}{args})")
        for _dt, site, chain in v.members:
            for role in _module_attribute_roles(chain, site.after_stage):
                if role not in parameter_roles:
                    parameter_roles.append(role)
    sources = "; ".join(dict.fromkeys(f"{s.implementation} ({s.source})" for v in variants for _, s, _ in v.members))
    plan = _GraphPassPlan(
        title=f"{camel}: custom graph pass replacing the {recipe.title} chain with {recipe.fused_op}.",
        doc=[
            "A register_replacement pattern binds its inputs to placeholders; after freeze() a parameter the chain "
            "reads can be a get_attr constant instead (mismatch type 6), so this pass walks the frozen graph itself. "
            "Each chain below is the model's subgraph after freeze(), op by op, with its exact constants.",
            "",
            f"Model source (the code phase 1 located): {sources}.",
            "",
            "Call it from MindieSDBackend's graph_rewrite_after_freezing (the edit `sdcompile scaffold` shows); "
            "inserting NPU ops before freeze() crashes freezing.",
        ],
        recipe=recipe,
        parameter_roles=parameter_roles,
        variants=variants,
        chain_entries=entries,
        pass_class=pass_class,
    )
    text = render(GRAPH_PASS_TEMPLATE, graph_pass_context(plan, provenance))
    _syntax_check(text, f"passes/{module}.py")
    namespace = import_source(text, module, "passes", str(target.tree.compilation / "passes" / f"{module}.py"))
    cls = getattr(namespace, pass_class)
    checks, chains = {}, {}
    by_dtype: dict[str, list] = {}
    for v in variants:
        for dt, site, chain in v.members:
            by_dtype.setdefault(dt, []).append((site, v.expected_name(dt, {c.name: c.spelled
                                                                             for c in chain.constants})))
    for dt, sites in by_dtype.items():
        for c in check_graph_pass(cls, sites, dt):
            checks[(dt, c.site)] = c
        chains[dt] = sum(1 for s, _ in sites)
    return text, checks, chains


def _public_variant(v: _Variant) -> Variant:
    from sdcompile.graph.pattern_codegen import replacement_expr

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
        groups = sorted({label.split(": ")[0] for r in rows for label in r.production.by})
        for g in groups:
            steps.append(f"sdcompile verify {model_arg} --group {g}{device}   # numerics of the group that covers "
                         "the sites")
        steps.append(f"sdcompile scaffold {model_arg} --op {op}{device} --force   # generate a pattern anyway")
    elif decision == "cannot generate" and any("--path graph-pass" in r.reason for r in rows):
        steps.append(f"sdcompile scaffold {model_arg} --op {op}{device} --path graph-pass   # a custom pass matches "
                     "the graph's own nodes")
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
            steps.append(f"{prefix}cd {tree.root} && pytest -p sdcompile.npu.pytest_plugin{plugin_device} {test}")
        if any(v.path == "graph-pass" for v in variants):
            steps.append(f"{prefix}cd {tree.root} && git apply <workspace>/{spec.name}/{op}/scaffold/backend.diff   "
                         "# or patch -p1")
            test = next(r.path for r in results if r.kind == "graph pass test")
            steps.append(f"{prefix}cd {tree.root} && pytest -p sdcompile.npu.pytest_plugin{plugin_device} {test}")
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

    from sdcompile.fsutil import atomic_write_text
    from sdcompile.report.output import dumps

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
