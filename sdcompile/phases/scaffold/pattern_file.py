"""The generated pattern module (path A): rendered from its template, imported as the target would import it,
and its group run on the sites it came from."""

from __future__ import annotations

from dataclasses import dataclass

from sdcompile.phases.scaffold.sources import syntax_check
from sdcompile.phases.scaffold.variants import TORCH_DTYPES


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

    from sdcompile.core.graph.nodes import op_name

    gm = make_fx(cls.replacement, tracing_mode="fake")(*cls.inputs())
    return {op_name(n) for n in gm.graph.nodes if n.op == "call_function"}


def pattern_file(variants, recipe, names, camel, provenance, target):
    """Render the pattern module, import it as the target would and run its group on the sites."""
    from sdcompile.core.graph.nodes import module_path
    from sdcompile.phases.scaffold.selfcheck import check_pattern_group, import_source
    from sdcompile.phases.scaffold.sources import PATTERN_TEMPLATE, pattern_context, render

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
    syntax_check(text, rel)
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
            from sdcompile.phases.scaffold.reuse import run_groups

            run = run_groups(stage.gm, [(names.group, classes)], names.group, target.tree.root)
            for r in run.replacements:
                expected[module_path(stage.node(r.anchor)) or ""] = r.pattern
        model_sites[dt] = dict(sorted(expected.items()))
    return text, checks, gone, model_sites
