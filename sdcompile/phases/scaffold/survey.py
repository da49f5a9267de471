"""The survey of a model: per dtype every site of the op in the graph MindieSDBackend compiles, the target's
groups run on it (all enabled groups in registry order, then each group alone), and what each site needs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sdcompile.core.graph.capture import capture_graphs
from sdcompile.core.graph.nodes import target_name
from sdcompile.core.graph.pattern_codegen import required_mismatch
from sdcompile.core.target.group_runner import GroupRun, GroupRunner, production_groups
from sdcompile.core.target.loader import emulated_fused_op_targets
from sdcompile.core.zoo.model_step import first_forward
from sdcompile.core.zoo.runtrace import trace_forward
from sdcompile.phases.scaffold.path_choice import choose_path
from sdcompile.phases.scaffold.results import GroupCoverage, Need, PathChoice, Why
from sdcompile.phases.scaffold.reuse import coverage
from sdcompile.phases.scaffold.sites import site_graphs
from sdcompile.util.reasons import Reason


@dataclass
class Survey:
    """Per dtype: every site of the op with the production run and the per-group runs on its graph."""

    sites: dict = field(default_factory=dict)  # dtype -> [(SiteGraph, production GroupRun, {group: GroupRun})]
    production: list = field(default_factory=list)
    production_pass: Any = None  # group_runner.GroupRunner of the production groups: what runs before a graph pass
    errors: list = field(default_factory=list)
    label: str = ""
    diffusers_version: str | None = None

    def all_sites(self) -> list[tuple[str, Any]]:
        """(dtype, SiteGraph) of every site, in survey order."""
        return [(dt, site) for dt, entries in self.sites.items() for site, _, _ in entries]

    def site_targets(self) -> list[tuple[str, ...]]:
        """The op names of each site's nodes (before freezing, else after): which recipe form its chain has."""

        return [tuple(target_name(n.target) for n in (site.before or site.after or ()) if n.op == "call_function")
                for _dt, site in self.all_sites()]


def _reuse_runs(target, stages, say) -> tuple[dict, dict, list[str], list[str], Any]:
    """Per captured graph: the production run and one run per loaded group (each group registered once)."""

    production = production_groups(target)
    loaded = [g.group for g in target.groups if g.loaded]
    say(f"reuse check: registering {len(loaded)} groups through the target's PatternMatchPass")
    registered = {g: GroupRunner(target.tree.root, [(g, target.registration_of(g))]) for g in loaded}
    whole = GroupRunner.merged([registered[g] for g in production])
    prod_runs, group_runs, errors = {}, {}, []
    for stage in stages:
        say(f"reuse check on graph {stage.graph_index}: {len(production)} enabled groups, then {len(loaded)} alone")
        prod_runs[id(stage)] = whole.apply(stage.gm, "production")
        group_runs[id(stage)] = {g: registered[g].apply(stage.gm, g) for g in loaded}
        for run in [prod_runs[id(stage)], *group_runs[id(stage)].values()]:
            errors.extend(run.errors)
    return prod_runs, group_runs, production, list(dict.fromkeys(errors)), whole


def take_survey(target, request, locate_sites, dtypes, device, say, chain_start=None, title="op") -> Survey:
    """Build, trace and compile the model per dtype as MindieSDBackend does, then run the reuse check.
    `locate_sites(trace, model_class)`: the op's implementations in a recorded forward (zoo.locate); `chain_start`:
    whether a node starts a chain of the op (chain_extent.chain_start: a site holding several is split);
    `title`: the op's, for progress."""

    rne, decomp = target.redundant_node_pass(), target.decomposition_table()
    fused_targets = emulated_fused_op_targets()
    spec = request.spec
    survey = Survey(label=spec.name)
    for dt in dtypes:
        say(f"building {spec.name} ({dt}) and locating its {title} sites")
        built, trace = first_forward(request.with_dtype(dt), trace_forward)
        survey.label = built.label
        located = locate_sites(trace, type(built.module))
        say(f"compiling {spec.name} ({dt}) as MindieSDBackend does")
        capture = capture_graphs(built.module, built.inputs, model=built.name, dtype=dt, device=device.label,
                                 redundant_node_elimination=rne,
                                 redundant_node_elimination_name=target.REDUNDANT_NODE_PASS_NAME,
                                 decompositions=decomp)
        survey.diffusers_version = capture.metadata.diffusers_version
        sites = site_graphs(located, trace.lines, capture, fused_targets, chain_start)
        stages = list({id(s.before_stage): s.before_stage for s in sites if s.before_stage is not None}.values())
        prod_runs, group_runs, survey.production, errors, survey.production_pass = _reuse_runs(target, stages, say)
        survey.errors.extend(e for e in errors if e not in survey.errors)
        survey.sites[dt] = [(site, prod_runs.get(id(site.before_stage)), group_runs.get(id(site.before_stage), {}))
                            for site in sites]
    return survey


def _empty_run():
    return GroupRun("production", (), (), frozenset(), ())


def _need(site, prod, choice: PathChoice | None, force: bool, recipe) -> tuple[str, Reason, bool]:
    """(what the site needs, why, whether it needs generation), decided on the production run's status."""
    if site.producer_only:
        return Need.NOT_A_SITE, Reason.of(Why.PRODUCER_ONLY), False
    if site.unmodulated:
        return Need.NOT_A_SITE, Reason.of(Why.UNMODULATED), False
    if prod.status == "not in the graph":
        return Need.NOT_IN_GRAPH, site.problem or Reason.of(Why.NOT_IN_GRAPH), False
    if prod.status == "fused by the model":
        return Need.FUSED, Reason.of(Why.FUSED_BY_MODEL, fused_ops=site.fused_ops), False
    if site.problem:
        return Need.CANNOT, site.problem, False
    if recipe is not None and (other := required_mismatch(site.before, recipe)) is not None:
        node, key, has, wants = other
        return Need.OTHER_MATH, Reason.of(Why.OTHER_MATH, op=target_name(node.target), key=key, has=has,
                                          wants=wants, title=recipe.title), False
    if prod.status == "replaced" and not force:
        return Need.COVERED, Reason.of(Why.COVERED), False
    need = Need.of_path(choice.path)
    return need, Reason.of(Why.NEEDS_GENERATION, status=prod.status, forced=prod.status == "replaced"), True


def classify(survey: Survey, site_forms, decisions, path, force):
    """What each site needs: (path choices, sites needing generation, {(dtype, site): (production coverage,
    groups alone, need, reason)}, {(dtype, site): (names of its nodes the production groups replace, those
    groups)})."""

    choices: dict[str, PathChoice] = {}
    needy: list[tuple[str, Any, PathChoice]] = []
    provisional: dict[tuple[str, str], tuple] = {}
    taken: dict[tuple[str, str], tuple[frozenset[str], tuple[str, ...]]] = {}
    for dt, entries in survey.sites.items():
        for site, prod_run, by_group in entries:
            impl = site.implementation
            if impl not in choices and not site.not_a_site:  # no chain here, so no path to choose
                choices[impl] = choose_path(path, impl, decisions.get(impl))
            recipe = site_forms.of(site)
            key_ops = recipe.chain_ops if recipe else ()
            prod = coverage(prod_run or _empty_run(), site, key_ops)
            if prod.status == "partly replaced" and prod_run is not None:
                taken[(dt, site.path)] = (frozenset(prod_run.taken(site.node_names)[0]), prod.groups)
            alone = tuple(GroupCoverage(g, c.status, c.replaced, c.by, c.left)
                          for g, run in by_group.items() if (c := coverage(run, site, key_ops)).replaced)
            need, reason, generate = _need(site, prod, choices.get(impl), force, recipe)
            if generate:
                needy.append((dt, site, choices[impl]))
            provisional[(dt, site.path)] = (prod, alone, need, reason)
    return choices, needy, provisional, taken
