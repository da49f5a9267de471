"""The generated custom graph pass (`--path graph-pass` only: MindIE-SD's maintainers forbid custom passes
upstream): rendered from its template, imported as the target would import it, and run on the sites it came from
(and on sites whose own chain could not be written)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from sdcompile.core.graph.nodes import op_name
from sdcompile.phases.scaffold.pass_context import graph_pass_context
from sdcompile.phases.scaffold.selfcheck import check_graph_pass, import_source
from sdcompile.phases.scaffold.sources import GRAPH_PASS_TEMPLATE, render, syntax_check


@dataclass
class _GraphPassPlan:
    title: str
    doc: list
    parameter_roles: list
    variants: list
    chain_entries: list
    pass_class: str


def _module_attribute_roles(chain, stage) -> list[str]:
    """The chain's inputs that are module attributes in `stage` (the pass takes them from get_attr nodes)."""
    roles = []
    for i in chain.inputs:
        origin = stage.origins.get(i.node) if stage is not None else None
        if origin is not None and origin.is_module_attribute:
            roles.append(i.role)
    return roles


def pass_file(variants, camel, pass_class, module, provenance, target, unwritten=()):
    """Render the graph pass, import it as the target would and run it on the sites: (source, site checks,
    the chains it replaced per dtype, the same on the graphs as the production groups leave them: {} when no chain
    is written in that form). An op has one form a graph pass can insert (the others' fused inputs are computed from
    the chain's: has_graph_pass_form), so the variants share their recipe."""

    recipes = list({v.recipe.form: v.recipe for v in variants}.values())
    entries, parameter_roles = [], []
    for v in variants:
        entries += v.factory_calls()
        for _dt, site, chain in v.members:
            for role in _module_attribute_roles(chain, site.after_stage):
                if role not in parameter_roles:
                    parameter_roles.append(role)
    sources = "; ".join(dict.fromkeys(f"{s.implementation} ({s.source})" for v in variants for _, s, _ in v.members))
    plan = _GraphPassPlan(
        title=f"{camel}: custom graph pass replacing the "
              + " and ".join(f"{r.title} chain with {r.fused_op}" for r in recipes) + ".",
        doc=[
            "A register_replacement pattern binds its inputs to placeholders and is compared as registered: after "
            "freeze() a parameter the chain reads can be a get_attr constant instead (mismatch type 6), and the "
            "registration can decompose an op the graph keeps whole (type 1). This pass walks the frozen graph "
            "itself. Each chain below is the model's subgraph after freeze(), op by op, with its exact constants.",
            "",
            f"Model source (the code phase 1 located): {sources}.",
            "",
            "Call it from MindieSDBackend's graph_rewrite_after_freezing (the edit `sdcompile scaffold` shows); "
            "inserting NPU ops before freeze() crashes freezing.",
        ],
        parameter_roles=parameter_roles,
        variants=variants,
        chain_entries=entries,
        pass_class=pass_class,
    )
    text = render(GRAPH_PASS_TEMPLATE, graph_pass_context(plan, provenance))
    syntax_check(text, f"passes/{module}.py")
    namespace = import_source(text, module, "passes", str(target.tree.passes_dir / f"{module}.py"))
    cls = getattr(namespace, pass_class)
    checks, chains = {}, {}
    by_dtype: dict[str, list] = {}
    as_left: dict[str, list] = {}  # the chains as the production groups leave them, on graphs they ran on
    for v in variants:
        for dt, site, chain in v.members:
            (as_left if v.after_groups else by_dtype).setdefault(dt, []).append(
                (site, v.expected_name(dt, {c.name: c.spelled for c in chain.constants}), chain.nodes))
    for dt, site in unwritten:
        # the recipe's key ops at the site (its multiplies, its LayerNorm) are what must be gone
        key_nodes = tuple(n.name for n in site.after if any(op_name(n) in r.chain_ops for r in recipes))
        if dt in by_dtype and key_nodes:
            by_dtype[dt].append((site, "", key_nodes))
    for dt, sites in by_dtype.items():
        found, chains[dt] = check_graph_pass(cls, sites, dt)
        for c in found:
            checks[(dt, c.site)] = c
    # a site is served when the pass replaces its chain with the groups off and as the groups leave it
    chains_as_left = {}
    for dt, sites in as_left.items():
        found, chains_as_left[dt] = check_graph_pass(cls, sites, dt)
        for c in found:
            plain = checks.get((dt, c.site))
            checks[(dt, c.site)] = c if plain is None else replace(
                plain, hit=plain.hit and c.hit, by=tuple(dict.fromkeys(plain.by + c.by)),
                left=plain.left or c.left, error=plain.error or c.error)
    return text, checks, chains, chains_as_left
