"""The generated GraphPatternEntry carrier: chains no register_replacement pattern can hold on this torch, written
from the graph the pattern pass sees (before freeze()), each an inductor pattern with a handler inserting the
fused call, registered by `register_<model>_<op>_graph_entries(pattern_pass)`. Rendered from its template,
imported as the target would import it, registered in a fresh instance of the target's own PatternMatchPass and
run on the sites it came from (and on sites whose own chain could not be written)."""

from __future__ import annotations

from dataclasses import dataclass

from sdcompile.core.graph.nodes import op_name
from sdcompile.core.target.group_runner import fresh_pattern_pass
from sdcompile.phases.scaffold.pass_context import entries_context
from sdcompile.phases.scaffold.results import SiteCheck
from sdcompile.phases.scaffold.selfcheck import check_chain_carrier, import_source
from sdcompile.phases.scaffold.sources import GRAPH_ENTRIES_TEMPLATE, render, syntax_check


@dataclass
class EntriesPlan:
    title: str
    doc: list
    parameter_roles: list
    variants: list
    chain_entries: list
    register_function: str


def _plan(variants, camel, names) -> EntriesPlan:
    recipes = list({v.recipe.form: v.recipe for v in variants}.values())
    entries, roles = [], []
    for v in variants:
        entries += v.factory_calls()
        for _dt, site, chain in v.members:
            for i in chain.inputs:
                origin = site.before_stage.origins.get(i.node) if site.before_stage is not None else None
                if origin is not None and origin.is_module_attribute and i.role not in roles:
                    roles.append(i.role)
    sources = "; ".join(dict.fromkeys(f"{s.implementation} ({s.source})" for v in variants for _, s, _ in v.members))
    function, flag = names.entries_function, names.flag
    return EntriesPlan(
        title=f"{camel}: GraphPatternEntry carrier ({', '.join(r.fused_op for r in recipes)}).",
        doc=["Replaces the " + " and ".join(f"{r.title} chain with {r.fused_op}" for r in recipes) + ".", "",
            "A traced register_replacement pattern cannot hold these chains on this torch (the registration "
            "re-traces an op differently from how the model graph holds it, a view's size varies with the "
            "sequence, or an input must come from a particular producer). Each chain below is the model's own "
            "subgraph as the pattern pass meets it, before freeze(), op by op with its exact constants; "
            "_pattern() turns it into an inductor pattern (KeywordArg leaves, Ignored() sizes, shared nodes "
            "MULTIPLE) and a handler inserts the fused call before the chain's output.",
            "",
            f"Model source (the code phase 1 located): {sources}.",
            "",
            f"Registered by `{function}(pattern_pass)`, which passes/__init__.py calls under "
            f"`{flag}` before pattern_registry's groups (`sdcompile register` writes that call).",
        ],
        parameter_roles=roles,
        variants=variants,
        chain_entries=entries,
        register_function=function,
    )


def entries_file(variants, camel, names, provenance, target, unwritten=()):
    """Render the carrier, import it as the target would, and run its entries on the sites: (source, site checks,
    the chains it replaced per dtype)."""

    plan = _plan(variants, camel, names)
    module = names.module
    text = render(GRAPH_ENTRIES_TEMPLATE, entries_context(plan, provenance))
    syntax_check(text, f"patterns/{module}.py")
    namespace = import_source(text, module, "patterns", str(target.tree.patterns_dir / f"{module}.py"))
    recipes = list({v.recipe.form: v.recipe for v in variants}.values())
    by_dtype: dict[str, list] = {}
    for v in variants:
        for dt, site, chain in v.members:
            by_dtype.setdefault(dt, []).append(
                (site, v.expected_name(dt, {c.name: c.spelled for c in chain.constants}), _must_go(chain, site)))
    for dt, site in unwritten:
        # the recipe's key ops at the site (its multiplies, its LayerNorm) are what must be gone
        key_nodes = tuple(n.name for n in site.before if any(op_name(n) in r.chain_ops for r in recipes))
        if dt in by_dtype and key_nodes:
            by_dtype[dt].append((site, "", key_nodes))
    checks, chains = {}, {}
    for dt, sites in by_dtype.items():
        found, chains[dt] = check_entries(namespace, plan.register_function, sites, dt)
        for c in found:
            checks[(dt, c.site)] = c
    return text, checks, chains, plan.register_function


def _must_go(chain, site) -> tuple[str, ...]:
    """The chain's nodes a replacement removes: all but those the fused call reads (a table as it meets x, bound
    by `binds`) and what computes them; a pattern's replacement recomputes those, a handler keeps them."""
    bound_vars = {var for _role, var in chain.bind_points}
    inside = set(chain.nodes)
    keep: set[str] = set()
    stack = [site.before_stage.node(op.node) for op in chain.ops if op.var in bound_vars]
    while stack:
        node = stack.pop()
        if node.name in inside and node.name not in keep:
            keep.add(node.name)
            stack.extend(node.all_input_nodes)
    return tuple(n for n in chain.nodes if n not in keep)


def check_entries(namespace, function: str, sites, dtype: str) -> tuple[list[SiteCheck], int]:
    """Register the carrier's entries in a fresh PatternMatchPass of the target and apply it (upstream's loop, to a
    fixpoint) to a copy of each site's before-freezing graph (selfcheck.check_chain_carrier)."""

    def run(gm) -> list:
        start = len(namespace.REPLACED)
        pattern_pass = fresh_pattern_pass()
        getattr(namespace, function)(pattern_pass.pattern_pass)
        pattern_pass(gm)
        return namespace.REPLACED[start:]

    return check_chain_carrier(run, sites, dtype)
