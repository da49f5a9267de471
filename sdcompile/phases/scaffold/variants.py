"""The sites needing a replacement grouped into distinct chains (one variant per path and subgraph), each chain
first registered as a probe so edge ops the registration rewrites are trimmed, then named.

    variants, failed, findings, graph_pass_can = plan_variants(needy, site_forms)
    name_variants(variants, camel)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sdcompile.core.graph.pattern_chain import ChainError, op_target_name
from sdcompile.core.graph.pattern_codegen import extract_chain
from sdcompile.core.graph.pattern_graph_call import graph_call_refusal
from sdcompile.core.zoo.models import torch_dtype
from sdcompile.phases.choices import TABLE_PATHS, Carrier
from sdcompile.phases.scaffold.production_form import production_form
from sdcompile.phases.scaffold.registration_probe import probe, trim
from sdcompile.phases.scaffold.results import Refused, Why
from sdcompile.phases.scaffold.sites import input_origins
from sdcompile.util.reasons import Reason

TORCH_DTYPES = {"bf16": "torch.bfloat16", "fp16": "torch.float16", "fp32": "torch.float32"}


@dataclass
class VariantPlan:
    path: Carrier
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
    bound: dict = field(default_factory=dict)  # role -> chain variable the fused op takes instead (bind_at, gate)
    choice: dict = field(default_factory=dict)  # the recipe's choices as the numerics gate settled them
    graph_choice: dict = field(default_factory=dict)  # the graph call's choices (keyword -> literal), path B
    # path B: the groups whose replacement this chain holds (another variant's chain as they leave it), else ()
    after_groups: tuple[str, ...] = ()

    def factory_calls(self) -> list[str]:
        """One call of the factory per entry (dtype and constants), as the group list or CHAINS holds it."""
        return [f"{self.factory}({TORCH_DTYPES[dt]}" + "".join(f", {k}={val}" for k, val in constants.items()) + ")"
                for dt, constants in self.entries]

    def expected_name(self, dtype: str, constants: dict[str, str]) -> str:
        """What name() (or the chain's name) evaluates to for one entry, exactly as the generated f-string."""
        text = f"{self.name}-{TORCH_DTYPES[dtype]}"
        if self.name_has_constants:
            text += "".join(f"-{k}{float(v)!r}" for k, v in constants.items())
        return text


def _probed_chain(chain, nodes, stage, recipe, dt, probed, findings: list[Reason]):
    """The chain a register_replacement pattern can hold, and the edge ops trimmed off it because registration
    rewrites them (Refused when such an op sits inside the chain)."""

    result = probed(chain, dt)
    if not result.lost:
        return chain, []
    finding = Reason.of(Why.REGISTRATION_FINDING, torch=_torch_version(), lost=list(result.lost),
                        gained=list(result.gained))
    if finding not in findings:
        findings.append(finding)
    kept, trimmed = trim(nodes, result.lost)
    inner = sorted({t for n in kept if (t := op_target_name(n.target)) in result.lost}
                   | {op for op in result.lost if op in recipe.chain_ops})
    if not inner:
        chain = extract_chain(kept, recipe, torch_dtype(dt), input_origins(stage))
        inner = list(probed(chain, dt).lost)
    if inner:
        can = has_graph_pass_form(recipe)
        raise Refused(Reason.of(Why.INNER_OP, inner=list(inner), gained=list(result.gained), entry_can=can),
                      entry_can=can)
    return chain, trimmed


def site_nodes(site, path: str) -> tuple:
    """A site's nodes and stage in the graph its carrier meets: the pattern pass's (before freezing) for a pattern
    or a GraphPatternEntry, the after-freezing graph for a custom pass."""
    return (site.after, site.after_stage) if path == Carrier.GRAPH_PASS else (site.before, site.before_stage)


def has_graph_pass_form(recipe) -> bool:
    """A graph pass can insert the recipe's op: its inputs are values the chain holds, and the call has no mode to
    choose or the graph call lists the op's own literals for it."""
    return recipe.graph_pass and (not recipe.choices or bool(recipe.graph_call.choices))


def plan_variants(needy, site_forms, taken=None, production=None) -> tuple[list[VariantPlan], dict, list[str], set]:
    """Group the sites needing a replacement by distinct chain, each written with its own recipe form
    (`site_forms`: forms.SiteForms). Pattern chains are first registered as a probe:
    edge ops the registration rewrites are trimmed (registration_probe); a rewritten op inside the chain makes
    the site ungeneratable on this path. A graph-pass chain the production groups replace part of (`taken`: (dtype,
    site) -> node names, groups) is also planned as they leave it (`production`: production_form.ProductionStages),
    since the pass runs after them; refused when what they leave is not one chain.
    Returns the plans, the refused sites with why, findings, and the refused sites a custom graph pass can
    replace."""

    variants: list[VariantPlan] = []
    failed: dict[tuple[str, str], Reason] = {}
    graph_pass_can: set[tuple[str, str]] = set()
    findings: list[Reason] = []
    probes: dict[tuple, Any] = {}

    def probed(chain, dt):
        if chain.signature not in probes:
            probes[chain.signature] = probe(chain, torch_dtype(dt))
        return probes[chain.signature]

    for dt, site, choice in needy:
        recipe = site_forms.of(site)
        nodes, stage = site_nodes(site, choice.path)
        if not nodes:
            failed[(dt, site.path)] = Reason.of(Why.NO_NODES_AFTER_FREEZE)
            continue
        if choice.path in TABLE_PATHS and not has_graph_pass_form(recipe):
            failed[(dt, site.path)] = Reason.of(Why.NO_TABLE_FORM, title=recipe.title,
                                                computed_inputs=not recipe.graph_pass)
            continue
        trimmed: list[str] = []
        after: list = []  # (groups, site, chain) as the production groups leave it
        try:
            chain = extract_chain(nodes, recipe, torch_dtype(dt), input_origins(stage))
            if choice.path == Carrier.REPLACEMENT and chain.shared:
                raise Refused(Reason.of(Why.SHARED_START, start=recipe.starts_at),
                              entry_can=has_graph_pass_form(recipe))
            if choice.path == Carrier.REPLACEMENT:
                chain, trimmed = _probed_chain(chain, nodes, stage, recipe, dt, probed, findings)
            elif (why := graph_call_refusal(recipe, chain)) is not None:
                raise ChainError(why)
            elif choice.path == Carrier.GRAPH_PASS and (took := (taken or {}).get((dt, site.path))) is not None:
                # a custom pass runs after the pattern pass; an entry runs in it, registered ahead of the groups
                after = _as_groups_leave_it(chain, site, took, production, recipe, dt)
        except (ChainError, Refused) as exc:
            refused = exc if isinstance(exc, Refused) else Refused(Reason.of(Why.CHAIN, message=str(exc)),
                                                                   exc.graph_pass_can)
            failed[(dt, site.path)] = refused.reason
            if refused.entry_can:
                graph_pass_can.add((dt, site.path))
            continue
        for groups, member_site, member_chain in [((), site, chain), *after]:
            _add_member(variants, choice.path, recipe, member_site, dt, member_chain, trimmed, groups)
    return variants, failed, findings, graph_pass_can


def _add_member(variants, path, recipe, site, dt, chain, trimmed, after_groups) -> None:
    key = (path, chain.signature, recipe.form)
    variant = next((v for v in variants if (v.path, v.signature, v.recipe.form) == key), None)
    if variant is None:
        variant = VariantPlan(path, chain.signature, chain, recipe, site.implementation, site.source,
                              after_groups=after_groups)
        variant.trimmed = list(trimmed)
        variant.bound = dict(chain.bind_points)
        variants.append(variant)
    variant.members.append((dt, site, chain))


def _as_groups_leave_it(chain, site, taken, production, recipe, dt) -> list:
    """[(groups, site, chain)]: the graph-pass chain as the production groups that take part of it leave it ([] when
    they leave it whole after all); Refused with the group and its flag when no pass can match what they leave."""

    eaten = _taken_from(chain, taken)
    if eaten is None:
        return []
    if production is None:
        raise Refused(eaten)
    try:
        found = production_form(chain, site, production, recipe, torch_dtype(dt))
    except Refused as exc:
        raise Refused(Reason.of(Why.PRODUCTION_TAKES_PART, **eaten.facts, then=exc.reason)) from None
    except ChainError as exc:
        raise Refused(Reason.of(Why.PRODUCTION_TAKES_PART, **eaten.facts,
                                then=Reason.of(Why.CHAIN, message=str(exc)))) from None
    if found is None:
        return []
    groups = tuple(group for group, _flag in taken[1])
    return [(groups, *found[::-1])]


def _taken_from(chain, taken) -> Reason | None:
    """Why a graph pass cannot replace this chain when production groups take some of its nodes first, else None."""
    if taken is None:
        return None
    names, groups = taken
    # `names` are before-freezing nodes, the chain's after-freezing ones: freeze() keeps the names of the nodes it
    # does not fold or merge, and a chain's compute ops are neither
    eaten = [op.target for op in chain.ops if op.node in names]
    return Reason.of(Why.PRODUCTION_TAKES_PART, groups=[list(g) for g in groups], ops=eaten) if eaten else None


def _torch_version() -> str:
    import torch

    return torch.__version__.split("+")[0]


def name_variants(variants: list[VariantPlan], camel: str) -> None:
    """Name each variant (pattern class or chain, its factory) and write its docstring lines; numbered when a
    path has more than one."""
    by_path: dict[str, list[VariantPlan]] = {}
    for v in variants:
        by_path.setdefault(v.path, []).append(v)
    for path, group in by_path.items():
        for k, v in enumerate(group, start=1):
            suffix = str(k) if len(group) > 1 else ""
            if path == Carrier.REPLACEMENT:
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
            # the docstring's first line: one implementation by name, several by count (the Source line names them)
            what = impls[0] if len(impls) == 1 else f"{len(impls)} implementations"
            v.summary = f"{what} at {len(v.members)} site(s) ({dts})"
            v.doc = [f"Source: {'; '.join(sources)}.", "",
                     f"Sites ({v.members[0][0]}): {', '.join(sites)}."]
            if v.trimmed:
                v.doc += ["", f"Left outside the pattern, in the graph around the fused op: {'; '.join(v.trimmed)}. "
                          "register_replacement registers that op differently from how the model graph holds it "
                          "(see `sdcompile scaffold`'s notes), so a pattern containing it would never match."]
            if v.after_groups:
                v.doc += ["", f"The same chain as {', '.join(v.after_groups)} (enabled by default) leaves it: the "
                          "pattern pass runs before freeze() and this pass after it, so with those groups on the "
                          "chain holds their fused op instead of the ops they replace."]
            if v.path in TABLE_PATHS:
                suffix_expr = "".join(f"-{c}{{{c}}}" for c in v.default_constants) if v.name_has_constants else ""
                v.chain_name_expr = f'f"{v.name}-{{dtype}}{suffix_expr}"'
