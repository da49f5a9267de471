"""Generation: the named variants rendered from the templates and checked on their sites, with their tests —
the pattern module (register_replacement) or the GraphPatternEntry carrier, each with its test; a custom graph
pass, its backend edit and its test only on --path graph-pass.

    planned, checks, backend_diff, notes = generate(variants, ...)  # rendered files, per-site checks
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from sdcompile.core.graph.pattern_recipes import combinations, load_recipes, materialised_roles
from sdcompile.core.target.edits.backend_pass import ensure_pass_call
from sdcompile.phases.choices import Carrier
from sdcompile.phases.scaffold.entries_file import entries_file
from sdcompile.phases.scaffold.files import PlannedFile
from sdcompile.phases.scaffold.numerics_gate import gate_graph_call
from sdcompile.phases.scaffold.pass_file import pass_file
from sdcompile.phases.scaffold.pattern_file import gated_pattern_file, pattern_file
from sdcompile.phases.scaffold.results import Why
from sdcompile.phases.scaffold.shadowing import shadowing_groups
from sdcompile.phases.scaffold.sources import (
    GRAPH_ENTRIES_TEST_TEMPLATE,
    GRAPH_PASS_TEST_TEMPLATE,
    PATTERN_TEST_TEMPLATE,
    entries_test_context,
    graph_pass_test_context,
    pattern_test_context,
    syntax_check,
)
from sdcompile.phases.scaffold.sources import render as render_template
from sdcompile.phases.scaffold.variants import name_variants, site_nodes
from sdcompile.util.reasons import Reason
from sdcompile.util.text_diff import unified_diff


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
    fused_ops: dict = field(default_factory=dict)  # pattern class -> the fused op its replacement inserts
    gone: dict = field(default_factory=dict)
    model_sites: dict = field(default_factory=dict)
    pass_class: str = ""
    pass_file: str = ""
    pass_module: str = ""
    backend_diff: str = ""
    model_chains: dict = field(default_factory=dict)
    approximation: float = 0.0  # the largest of the variants' recipes': added to every dtype's atol
    # graph pass: the production groups that take part of its chains, the chains written as they leave them, and
    # how many of those replace per dtype with those groups on
    groups_on: tuple = ()
    chains_groups_on: tuple = ()
    model_chains_groups_on: dict = field(default_factory=dict)
    flag: str = ""  # GraphPatternEntry carrier: the FusionPatterns flag passes/__init__.py registers it under
    register_function: str = ""


@dataclass
class Generated:
    planned: list = field(default_factory=list)  # PlannedFile
    checks: dict = field(default_factory=dict)  # (dtype, site) -> SiteCheck
    backend_diff: str = ""
    notes: list = field(default_factory=list)
    gate_runs: list = field(default_factory=list)  # numerics_gate.GateRun, every entry of every variant
    refused: dict = field(default_factory=dict)  # (dtype, site) -> why: the numerics gate refused its variant
    shadowing: tuple = ()  # enabled groups that take the generated group's sites when it is registered after them


def generate(variants, names, register_args, spec, device, tree, target, provenance, say, unwritten=(),
             production=None) -> Generated:
    """Render, gate, check and plan every generated file. `register_args`: what `sdcompile register` is given
    besides the tree (" --model <word> --op <op>"), for the generated files' next commands.

    `unwritten` ((dtype, site) pairs whose own chain could not be written) are checked against a generated graph
    pass too: it acts on the whole graph, so it may replace them anyway (AdaLN's modulation written inline after
    a separate LayerNorm module is the same chain as the modules' own). Their checks come back with expected "".
    `production`: the survey's production groups, registered, for measuring which of them the group must precede.
    """
    camel = names.group[: -len("PatternGroup")]
    # a pattern group's patterns are tried in order at a node: a form whose chain holds its norm (a LayerNorm's
    # adaln) before one matching the modulation alone, and within a form the longer chain first (one ending in a
    # cast before the same chain without it, which would otherwise take its ops and leave the cast)
    order = list(load_recipes())
    variants.sort(key=lambda v: (v.path, order.index(v.recipe.form), -len(v.chain.ops)))
    name_variants(variants, camel)
    out = Generated()
    model_spec = repr(_model_spec(spec))
    pattern_variants = [v for v in variants if v.path == Carrier.REPLACEMENT]
    entry_variants = [v for v in variants if v.path == Carrier.GRAPH_ENTRY]
    pass_variants = [v for v in variants if v.path == Carrier.GRAPH_PASS]
    if pattern_variants and entry_variants:
        raise ValueError("one fusion, one carrier: a run plans patterns or GraphPatternEntry chains, not both")
    if pattern_variants:
        say("rendering the pattern, checking its numerics and its sites")
        out.planned += _pattern_files(pattern_variants, names, camel, model_spec,
                                      register_args, device, tree, target, provenance, out, production)
    if entry_variants:
        say("rendering the GraphPatternEntry carrier, checking its numerics and its sites")
        entry_variants = _gated_chains(entry_variants, device, out)
    if entry_variants:
        out.planned += _entry_files(entry_variants, names, camel, model_spec, register_args, device,
                                    tree, target, provenance, out.checks, unwritten)
    if pass_variants:
        say("rendering the graph pass, checking its numerics and its sites")
        pass_variants = _gated_chains(pass_variants, device, out)
    if pass_variants:
        files, out.backend_diff, note = _pass_files(pass_variants, names, camel, model_spec, device, tree,
                                                    target, provenance, out.checks, unwritten)
        out.planned += files
        out.notes += [note] if note else []
    out.notes += [_materialised(v, roles) for v in pattern_variants + entry_variants + pass_variants
                  if v.name and (roles := materialised_roles(v.recipe, v.chain))
                  and not any((dt, s.path) in out.refused for dt, s, _ in v.members)]
    return out


def _materialised(v, roles) -> Reason:
    """What the replacement costs on the NPU: the fused op reads `roles` element for element with output_like."""
    recipe, by_role = v.recipe, {i.role: i for i in v.chain.inputs}
    return Reason.of(Why.MATERIALISED, name=v.name, fused_op=recipe.fused_op, reads=list(recipe.flat_roles),
                     like=recipe.output_like, like_shape=list(by_role[recipe.output_like].shape),
                     roles=[[r, list(by_role[r].shape) if r in by_role else None] for r in roles])


def _numerics_refusal(v, runs) -> Reason:
    """Why the numerics gate refused a variant: its first failing run, and the dtypes that failed."""
    run = runs[0]
    n, t = run.numerics, run.transform
    figures = (None if n is None else {"cosine": n.cosine, "max_abs": n.max_abs, "outside": n.outside,
                                       "elements": n.elements, "dtype": str(n.dtype)})
    return Reason.of(Why.NUMERICS, name=v.name, path=v.path, dtypes=list(dict.fromkeys(r.dtype for r in runs)),
                     figures=figures, error=run.error, transform_role=t.role if t else None,
                     transform=list(t.steps) if t else [], ignored=[list(i) for i in run.ignored])


def _refuse(refused, out: Generated) -> None:
    """The sites of variants the numerics gate refused, with why."""
    for v, runs in refused:
        reason = _numerics_refusal(v, runs)
        for dt, site, _chain in v.members:
            out.refused[(dt, site.path)] = reason


def _gated_chains(variants, device, out: Generated) -> list:
    """Path B: the graph-pass chains whose fused call agrees with the chain; the others refused."""

    kept, refused = [], []
    for v in variants:
        for combo in combinations(v.recipe.graph_call.choices):  # the first mode every entry agrees with
            v.graph_choice = combo
            runs = [gate_graph_call(v, next(c for d, _s, c in v.members if d == dt), dt, device)
                    for dt, _ in v.entries]
            failing = [r for r in runs if not r.passed]
            if not failing:
                break
        out.gate_runs += runs
        (refused.append((v, failing)) if failing else kept.append(v))
    _refuse(refused, out)
    return kept


def _model_spec(spec) -> dict:
    """What a generated test rebuilds the model from (sdcompile.testing.backend.zoo_model): paths as absolute text,
    checked to hold no quote or control character (ModelBuild.check)."""
    if spec.kind == "file":
        named: dict = {"model_file": f"{spec.path}:{spec.factory}"}
    else:
        named = {"model": spec.model_option} if spec.model_option else {}
    build = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(spec.build).items() if v is not None}
    return {**named, "build": build} if build else named


def _pattern_files(variants, names, camel, model_spec, register_args, device, tree, target, provenance,
                   out: Generated, production=None) -> list:
    """Path A: the pattern module and its test, for the variants the numerics gate keeps; site checks into `out`."""

    text, classes, variants, runs, refused = gated_pattern_file(variants, names, camel, provenance, target, device)
    out.shadowing = shadowing_groups(production, names.group, classes, variants, tree.root)
    out.gate_runs += runs
    _refuse(refused, out)
    if not variants:
        return []
    module_checks, gone, model_sites = pattern_file(variants, text, classes, names, target)
    checks = out.checks
    checks.update(module_checks)
    pattern_rel = str((tree.patterns_dir / names.pattern_filename).relative_to(tree.root))
    test_rel = f"tests/compilation/patterns/test_{names.module}.py"
    test_plan = _TestPlan(model_spec, device.model_sees_npu, test_rel, _unit_sites(variants, checks),
                          group=names.group, pattern_file=pattern_rel, register_args=register_args,
                          fused_ops={v.class_name: v.recipe.graph_call.op for v in variants}, gone=gone,
                          model_sites=model_sites, approximation=_approximation(variants))
    test_text = render_template(PATTERN_TEST_TEMPLATE, pattern_test_context(test_plan, provenance))
    syntax_check(test_text, test_rel)
    return [PlannedFile(tree.patterns_dir / names.pattern_filename, pattern_rel, "pattern", text),
            PlannedFile(tree.root / test_rel, test_rel, "pattern test", test_text)]


def _entry_files(variants, names, camel, model_spec, register_args, device, tree, target, provenance, checks,
                 unwritten):
    """The GraphPatternEntry carrier (patterns/<module>.py) and its test; the site checks are added to `checks`."""

    text, entry_checks, chains, function = entries_file(variants, camel, names, provenance, target, unwritten)
    checks.update(entry_checks)
    rel = str((tree.patterns_dir / names.pattern_filename).relative_to(tree.root))
    test_rel = f"tests/compilation/patterns/test_{names.module}.py"
    test_plan = _TestPlan(model_spec, device.model_sees_npu, test_rel, _unit_sites(variants, checks),
                          pattern_file=rel, register_args=register_args, model_chains=chains,
                          approximation=_approximation(variants), pass_module=f"mindiesd.compilation.patterns."
                          f"{names.module}", flag=names.flag, register_function=function)
    test_text = render_template(GRAPH_ENTRIES_TEST_TEMPLATE, entries_test_context(test_plan, provenance))
    syntax_check(test_text, test_rel)
    return [PlannedFile(tree.root / rel, rel, "graph entries", text),
            PlannedFile(tree.root / test_rel, test_rel, "graph entries test", test_text)]


def _pass_files(variants, names, camel, model_spec, device, tree, target, provenance, checks, unwritten):
    """Path B: the graph pass, the backend edit that calls it (a diff) and its test: (files, diff, note or "");
    the pass's site checks are added to `checks`."""

    module, pass_class = names.pass_module, names.pass_class
    text, pass_checks, chains, chains_as_left = pass_file(variants, camel, pass_class, module, provenance,
                                                         target, unwritten)
    checks.update(pass_checks)
    pass_rel = str((tree.passes_dir / f"{module}.py").relative_to(tree.root))
    backend_rel = str(tree.backend_file.relative_to(tree.root))
    old = tree.backend_file.read_bytes()
    comment = "\n".join(textwrap.wrap(
        f"{camel}: custom graph pass generated by `{provenance.command}`. It runs after freeze() and matches "
        "the graph's own nodes, where a register_replacement pattern cannot (a get_attr parameter, an op the "
        "registration decomposes).", 96))
    backend_diff = unified_diff(old, ensure_pass_call(old, module, pass_class, comment, backend_rel), backend_rel)
    note = None if backend_diff else Reason.of(Why.BACKEND_ALREADY_CALLS, backend=backend_rel, pass_class=pass_class)
    test_rel = names.pass_test
    test_plan = _TestPlan(model_spec, device.model_sees_npu, test_rel,
                          _unit_sites(variants, checks), pass_class=pass_class, pass_file=pass_rel,
                          pass_module=f"mindiesd.compilation.passes.{module}",
                          backend_diff="scaffold/backend.diff in the workspace", model_chains=chains,
                          approximation=_approximation(variants), model_chains_groups_on=chains_as_left,
                          groups_on=tuple(dict.fromkeys(g for v in variants for g in v.after_groups)),
                          chains_groups_on=tuple(v.name for v in variants if v.after_groups))
    test_text = render_template(GRAPH_PASS_TEST_TEMPLATE, graph_pass_test_context(test_plan, provenance))
    syntax_check(test_text, test_rel)
    return ([PlannedFile(tree.root / pass_rel, pass_rel, "graph pass", text),
             PlannedFile(tree.root / test_rel, test_rel, "graph pass test", test_text)], backend_diff, note)


def _approximation(variants) -> float:
    """The widest approximation among the variants' fused ops (one tolerance serves the whole generated test)."""
    return max((v.recipe.approximation for v in variants), default=0.0)


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
    for v in (v for v in variants if not v.after_groups):  # a chain as groups leave it: its site is there already
        for dt, site, _chain in v.members:
            nodes, stage = site_nodes(site, v.path)
            free = _site_inputs(nodes, stage)
            check = checks.get((dt, site.path))
            if site.kind != "class" or len(free) != 1 or check is None or len(check.patterns) != 1:
                continue
            val = free[0].meta["val"]
            out.append(_UnitSite(dt, site.path, check.patterns[0], tuple(val.shape), str(val.dtype)))
    return out
