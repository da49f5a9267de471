"""Generation: the sites needing a replacement grouped into distinct chains, named, rendered from the templates and
checked on their sites — the pattern module and its test (path A), the graph pass and its test (path B).

    variants, failed, findings = plan_variants(needy, recipe)      # (dtype, site, path) -> distinct chains
    planned, checks, backend_diff, notes = generate(variants, ...)  # rendered files, per-site checks
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from typing import Any

TORCH_DTYPES = {"bf16": "torch.bfloat16", "fp16": "torch.float16", "fp32": "torch.float32"}


@dataclass
class VariantPlan:
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
    approximation: float = 0.0  # the recipe's: added to every dtype's atol


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

    from sdcompile.core.graph.nodes import op_name

    gm = make_fx(cls.replacement, tracing_mode="fake")(*cls.inputs())
    return {op_name(n) for n in gm.graph.nodes if n.op == "call_function"}


def plan_variants(needy, recipe) -> tuple[list[VariantPlan], dict, list[str], set]:
    """Group the sites needing a replacement by distinct chain. Pattern chains are first registered as a probe:
    edge ops the registration rewrites are trimmed (registration_probe); a rewritten op inside the chain makes
    the site ungeneratable on this path. Returns the plans, the refused sites with why, findings, and the refused
    sites a custom graph pass can replace."""
    from sdcompile.core.graph.pattern_chain import ChainError, op_target_name
    from sdcompile.core.graph.pattern_codegen import extract_chain
    from sdcompile.core.zoo.models import torch_dtype
    from sdcompile.phases.scaffold.registration_probe import probe, trim
    from sdcompile.phases.scaffold.sites import input_origins

    variants: list[VariantPlan] = []
    failed: dict[tuple[str, str], str] = {}
    graph_pass_can: set[tuple[str, str]] = set()
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
                    inner = sorted({t for n in kept if (t := op_target_name(n.target)) in result.lost}
                                   | {op for op in result.lost if op in recipe.chain_ops})
                    if not inner:
                        chain = extract_chain(kept, recipe, torch_dtype(dt), input_origins(stage))
                        inner = list(probed(chain, dt).lost)
                    if inner:
                        raise ChainError(
                            f"{', '.join(inner)} sits inside the chain and register_replacement registers it as "
                            f"{', '.join(result.gained) or 'something else'}, so no pattern over this chain can "
                            "match on this torch; --path graph-pass matches the graph's own nodes", graph_pass_can=True)
        except ChainError as exc:
            failed[(dt, site.path)] = str(exc)
            if exc.graph_pass_can:
                graph_pass_can.add((dt, site.path))
            continue
        key = (choice.path, chain.signature)
        variant = next((v for v in variants if (v.path, v.signature) == key), None)
        if variant is None:
            variant = VariantPlan(choice.path, chain.signature, chain, recipe, site.implementation, site.source)
            variant.trimmed = list(trimmed)
            variants.append(variant)
        variant.members.append((dt, site, chain))
    return variants, failed, findings, graph_pass_can


def _torch_version() -> str:
    import torch

    return torch.__version__.split("+")[0]


def _name_variants(variants: list[VariantPlan], camel: str) -> None:
    by_path: dict[str, list[VariantPlan]] = {}
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


def generate(variants, recipe, names, word, spec, op, device, tree, target, provenance, say, unwritten=()):
    """Render, check and plan every generated file. Returns (planned files, site checks, backend diff, notes).

    `unwritten` ((dtype, site) pairs whose own chain could not be written) are checked against a generated graph
    pass too: it acts on the whole graph, so it may replace them anyway (AdaLN's modulation written inline after
    a separate LayerNorm module is the same chain as the modules' own). Their checks come back with expected "".
    """
    from sdcompile.phases.scaffold.files import PlannedFile

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
                              fused_op=recipe.graph_call.op, gone=gone, model_sites=model_sites,
                              approximation=recipe.approximation)
        from sdcompile.phases.scaffold.sources import PATTERN_TEST_TEMPLATE, pattern_test_context, render

        test_text = render(PATTERN_TEST_TEMPLATE, pattern_test_context(test_plan, provenance))
        _syntax_check(test_text, test_rel)
        planned.append(PlannedFile(tree.root / test_rel, test_rel, "pattern test", test_text))
    if pass_variants:
        say("rendering the graph pass and checking it on its sites")
        module = names.module[: -len("_pattern")] + "_pass"
        pass_class = f"{camel}GraphPass"
        text, pass_checks, chains = _pass_file(pass_variants, recipe, camel, pass_class, module, provenance, target,
                                               unwritten)
        checks.update(pass_checks)
        pass_rel = f"{tree.compilation.relative_to(tree.root)}/passes/{module}.py"
        planned.append(PlannedFile(tree.root / pass_rel, pass_rel, "graph pass", text))
        from sdcompile.phases.scaffold.backend_edit import ensure_pass_call, unified_diff

        backend_rel = str(tree.backend_file.relative_to(tree.root))
        old = tree.backend_file.read_bytes()
        comment = "\n".join(textwrap.wrap(
            f"{camel}: custom graph pass generated by `{provenance.command}`. It runs after freeze() and matches "
            "the graph's own nodes, where a register_replacement pattern cannot (a get_attr parameter, an op the "
            "registration decomposes).", 96))
        new = ensure_pass_call(old, module, pass_class, comment, backend_rel)
        backend_diff = unified_diff(old, new, backend_rel)
        if not backend_diff:
            notes.append(f"{backend_rel} already calls {pass_class}: no backend edit needed")
        test_rel = f"tests/compilation/passes/test_{module}.py"
        test_plan = _TestPlan(model_spec, device.model_sees_npu, test_rel,
                              _unit_sites(pass_variants, checks), pass_class=pass_class, pass_file=pass_rel,
                              pass_module=f"mindiesd.compilation.passes.{module}",
                              backend_diff="scaffold/backend.diff in the workspace", model_chains=chains,
                              approximation=recipe.approximation)
        from sdcompile.phases.scaffold.sources import GRAPH_PASS_TEST_TEMPLATE, graph_pass_test_context, render

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
            from sdcompile.phases.scaffold.reuse import run_groups

            run = run_groups(stage.gm, [(names.group, classes)], names.group, target.tree.root)
            for r in run.replacements:
                expected[module_path(stage.node(r.anchor)) or ""] = r.pattern
        model_sites[dt] = dict(sorted(expected.items()))
    return text, checks, gone, model_sites


def _pass_file(variants, recipe, camel, pass_class, module, provenance, target, unwritten=()):
    from sdcompile.core.graph.nodes import op_name
    from sdcompile.phases.scaffold.selfcheck import check_graph_pass, import_source
    from sdcompile.phases.scaffold.sources import GRAPH_PASS_TEMPLATE, graph_pass_context, render

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
                                                                             for c in chain.constants}), chain.nodes))
    for dt, site in unwritten:
        # the recipe's key ops at the site (its multiplies, its LayerNorm) are what must be gone
        key_nodes = tuple(n.name for n in site.after if op_name(n) in recipe.chain_ops)
        if dt in by_dtype and key_nodes:
            by_dtype[dt].append((site, "", key_nodes))
    for dt, sites in by_dtype.items():
        found, chains[dt] = check_graph_pass(cls, sites, dt)
        for c in found:
            checks[(dt, c.site)] = c
    return text, checks, chains
