"""The outcome of a scaffold run: the decision over all sites, each site's row (what it needs, what was generated
for it and its check), the gate, and the variants as the result shows them."""

from __future__ import annotations

from sdcompile.core.graph.pattern_graph_call import graph_call_text
from sdcompile.core.graph.pattern_recipes import replacement_expr, replacement_prelude, replacement_setup
from sdcompile.phases.choices import TABLE_PATHS, Carrier, Decision
from sdcompile.phases.scaffold.results import (
    GENERATED,
    REUSED,
    Need,
    NumericsCheck,
    SiteRow,
    Variant,
    VariantConstant,
    VariantInput,
    Why,
)
from sdcompile.util.reasons import Reason


def decide(all_sites, provisional, needy, failed, force, title) -> tuple[str, Reason]:
    """(decision, why): reuse | already fused | generate | nothing located | cannot generate. `title`: the op's."""
    if not all_sites:
        return Decision.NOTHING_LOCATED, Reason.of(Why.NOTHING_LOCATED, title=title)
    needs = [Need.CANNOT if (dt, s.path) in failed else provisional[(dt, s.path)][2] for dt, s in all_sites]
    needs = [n for n in needs if n != Need.NOT_A_SITE]
    if not needs:
        return Decision.NOTHING_LOCATED, Reason.of(Why.NOTHING_LOCATED, title=title)
    counts = {n: needs.count(n) for n in dict.fromkeys(needs)}
    if not needy:
        # a site computing other math than the fused op (an exact GELU) is left as it is, and fails nothing
        served = [n for n in needs if n != Need.OTHER_MATH]
        if served and all(n == Need.FUSED for n in served):
            return Decision.ALREADY_FUSED, Reason.of(Why.ALREADY_FUSED, counts=counts)
        if served and all(n in REUSED for n in served):
            return Decision.REUSE, Reason.of(Why.REUSE, counts=counts)
        why = {provisional[(dt, s.path)][3] for dt, s in all_sites if (dt, s.path) not in failed
               and provisional[(dt, s.path)][2] not in (*REUSED, Need.NOT_A_SITE)}
        return Decision.CANNOT_GENERATE, Reason.of(Why.NOTHING_GENERATABLE, counts=counts,
                                            why=why.pop() if len(why) == 1 else None)
    if failed and len(failed) == len(needy):
        reasons = set(failed.values())
        return Decision.CANNOT_GENERATE, Reason.of(Why.NONE_WRITABLE, needy=len(needy),
                                            why=reasons.pop() if len(reasons) == 1 else None)
    forced = force and any(n in GENERATED for n in needs)
    return Decision.GENERATE, Reason.of(Why.GENERATE, generated=len(needy) - len(failed), forced=forced, counts=counts)


def _generated_name(variants, dt, site) -> str | None:
    """The pattern (or chain) name generated for the site, None when no variant holds it."""
    variant = next((v for v in variants for d, s, _ in v.members if d == dt and s is site), None)
    if variant is None:
        return None
    chain = next(c for d, s, c in variant.members if d == dt and s is site)
    return variant.expected_name(dt, {c.name: c.spelled for c in chain.constants})


def site_rows(all_sites, provisional, failed, covered, checks, variants, graph_pass_can) -> tuple[SiteRow, ...]:
    """One row per (dtype, site). `covered`: sites whose own chain could not be written but which a pass
    generated from the other sites replaced (with why their own could not be)."""
    rows = []
    carrier = Need.GRAPH_ENTRY if any(v.path == Carrier.GRAPH_ENTRY for v in variants) else Need.GRAPH_PASS
    for dt, site in all_sites:
        key = (dt, site.path)
        prod, alone, need, reason = provisional[key]
        if key in failed:
            need, reason = Need.CANNOT, failed[key]
        elif key in covered:
            need, reason = carrier, Reason.of(Why.COVERED_BY_GENERATED, by=checks[key].by, own=covered[key])
        rows.append(SiteRow(dt, site.path, site.implementation, site.source, len(site.before), site.graph_index,
                            prod, alone, need, reason, _generated_name(variants, dt, site), checks.get(key),
                            need == Need.CANNOT and key in graph_pass_can))
    return tuple(rows)


def all_hit(checks_of_generated) -> bool:
    """Every site a source was generated for is replaced by it (the condition for writing anything)."""
    return bool(checks_of_generated) and all(c.hit for c in checks_of_generated.values())


def gate(decision: str, failed, planned, checks_of_generated) -> tuple[str, Reason | None]:
    """("pass" | "fail", why nothing was written although sources were generated, or None)."""
    withheld = None
    if planned and not all_hit(checks_of_generated):
        missed = [f"{c.dtype} {c.site}" for c in checks_of_generated.values() if not c.hit]
        withheld = Reason.of(Why.WITHHELD, missed=missed)
    failing = decision in (Decision.NOTHING_LOCATED, Decision.CANNOT_GENERATE) or failed or withheld is not None
    return ("fail" if failing else "pass"), withheld


def public_variant(v) -> Variant:
    """A planned variant as the result shows it."""

    chain = v.chain
    try:
        if v.path in TABLE_PATHS:  # what the handler or the pass inserts, not the pattern's replacement
            replacement = graph_call_text(v.recipe, chain, v.graph_choice)
        else:
            call = replacement_expr(v.recipe, chain, v.bound, v.choice)
            replacement = "; ".join([*replacement_prelude(chain, v.bound),
                                     *replacement_setup(v.recipe, chain, v.bound), call])
    except Exception as exc:  # noqa: BLE001 - shown, the check reports the failure
        replacement = f"<{exc}>"
    sites = tuple(f"{dt} {s.path}" for dt, s, _ in v.members)
    entries = tuple(v.factory_calls())
    return Variant(v.path, v.name, v.factory, v.implementation, v.source, sites, entries,
                   tuple(VariantConstant(c.name, c.graph_value, c.spelled, c.fp32_rounded) for c in chain.constants),
                   tuple(VariantInput(i.role, tuple(i.shape), str(i.dtype), i.origin) for i in chain.inputs),
                   tuple(chain.search_body), replacement,
                   tuple(v.trimmed), tuple(v.bound.items()), tuple(v.after_groups))


def numerics_check(run) -> NumericsCheck:
    """A numerics_gate.GateRun as the result shows it."""
    n, t = run.numerics, run.transform
    chain, replacement = run.chain_moved, run.replacement_moved
    moved = (chain.moved, replacement.moved, max(replacement.materialised - chain.materialised, 0)) \
        if chain and replacement else (None, None, None)
    return NumericsCheck(run.variant, run.dtype, run.passed, n.cosine if n else None, n.max_abs if n else None,
                         n.outside if n else 0, n.elements if n else 0, t.role if t else None,
                         t.steps if t else (), run.ignored, run.error, *moved)
