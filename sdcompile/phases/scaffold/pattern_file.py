"""The generated pattern module (path A): rendered from its template, imported as the target would import it,
and its group run on the sites it came from."""

from __future__ import annotations

from dataclasses import dataclass

from sdcompile.core.graph.nodes import module_path, op_name
from sdcompile.core.graph.pattern_recipes import combinations
from sdcompile.core.target.group_runner import run_groups
from sdcompile.phases.scaffold.numerics_gate import gate_pattern_class
from sdcompile.phases.scaffold.selfcheck import check_pattern_group, import_source
from sdcompile.phases.scaffold.sources import PATTERN_TEMPLATE, pattern_context, render, syntax_check


@dataclass
class _PatternPlan:
    title: str
    doc: list
    imports: tuple
    variants: list
    group: str
    group_entries: list


def _replacement_targets(cls) -> set[str]:
    """Ops the replacement traces to (so the test knows which chain ops must be gone)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    gm = make_fx(cls.replacement, tracing_mode="fake")(*cls.inputs())
    return {op_name(n) for n in gm.graph.nodes if n.op == "call_function"}


def _render_and_import(variants, names, camel, provenance, target):
    """(source, the group's classes) of the pattern module for `variants`."""

    entries = []
    for v in variants:
        entries += v.factory_calls()
    sources = "; ".join(dict.fromkeys(f"{s.implementation} ({s.source})" for v in variants for _, s, _ in v.members))
    recipes = list({v.recipe.form: v.recipe for v in variants}.values())
    title = " and ".join(r.title for r in recipes)
    calls = "; ".join(f"{r.call.split('(')[0]} ({r.fused_op})" for r in recipes)
    plan = _PatternPlan(
        title=f"{camel}: {title} fusion generated from the model's own ATen graph.",
        doc=[
            f"The search functions are the model's {title} subgraphs as MindIE-SD's pattern pass sees them "
            "(before freezing), written from the graph: the same aten op overloads, constants, casts and views, one "
            "pattern per distinct subgraph (edge ops the registration cannot represent are left outside; each "
            f"factory says which). The replacement calls {calls}.",
            "",
            f"Model source (the code phase 1 located): {sources}.",
        ],
        imports=tuple(dict.fromkeys(m for r in recipes for m in r.imports)),
        variants=variants,
        group=names.group,
        group_entries=entries,
    )
    text = render(PATTERN_TEMPLATE, pattern_context(plan, provenance))
    syntax_check(text, f"patterns/{names.pattern_filename}")
    module = import_source(text, names.module, "patterns", str(target.tree.patterns_dir / names.pattern_filename))
    return text, list(getattr(module, names.group))


def _gate(variants, classes, device) -> dict[int, list]:
    """id(variant) -> its GateRun per entry: each class's replacement against its search function."""

    runs: dict[int, list] = {}
    remaining = iter(classes)
    for v in variants:
        for dt, constants in v.entries:
            cls = next(remaining)
            chain = next(c for d, _s, c in v.members if d == dt and {k.name: k.spelled for k in c.constants}
                         == constants)
            runs.setdefault(id(v), []).append(gate_pattern_class(v, cls, chain, dt, device))
    return runs


def _retry(v, runs) -> bool:
    """Settle a failing variant one step further: bind the one transformed role the gate found, else take the
    recipe's next choice (with its initial bindings). False when nothing is left to try."""
    failing = [r for r in runs if not r.passed]
    transforms = {(r.transform.role, r.transform.node) for r in failing if r.transform}
    if len(transforms) == 1 and all(r.transform for r in failing):
        role, node = transforms.pop()
        if role not in v.bound:
            v.bound = {**v.bound, role: node}
            return True

    combos = combinations(v.recipe.choices)
    position = combos.index(v.choice) if v.choice in combos else 0
    if position + 1 < len(combos):
        v.choice = combos[position + 1]
        v.bound = dict(v.chain.bind_points)
        return True
    return False


def gated_pattern_file(variants, names, camel, provenance, target, device):
    """The numerics gate over the variants: a failing one is rebound to the transformed role the gate found, or
    takes the recipe's next choice, until it agrees or nothing is left. Returns (source, classes, kept variants,
    the last GateRun of every entry, refused variants with their failing runs)."""

    for v in variants:
        v.choice = dict(combinations(v.recipe.choices)[0])
    while True:
        text, classes = _render_and_import(variants, names, camel, provenance, target)
        runs = _gate(variants, classes, device)
        pending = [v for v in variants if not all(r.passed for r in runs[id(v)])]
        if not [v for v in pending if _retry(v, runs[id(v)])]:
            break
    kept = [v for v in variants if all(r.passed for r in runs[id(v)])]
    refused = [(v, [r for r in runs[id(v)] if not r.passed]) for v in variants if v not in kept]
    every = [r for v in variants for r in runs[id(v)]]
    if refused and kept:
        text, classes = _render_and_import(kept, names, camel, provenance, target)
    return text, classes, kept, every, refused


def pattern_file(variants, text, classes, names, target):
    """Run the group of the (gated) pattern module on the sites: (checks, ops gone per class, sites per dtype)."""

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
            run = run_groups(stage.gm, [(names.group, classes)], names.group, target.tree.root)
            for r in run.replacements:  # a module may hold several (one RoPE function applied to q and to k)
                expected.setdefault(module_path(stage.node(r.node)) or "", []).append(r.pattern)
        model_sites[dt] = {path: sorted(patterns) for path, patterns in sorted(expected.items())}
    return checks, gone, model_sites
