"""The self-contained HTML report of `sdcompile benefit`: the ledger as cards and a bar per changed kernel, the side
effects with where they sit, and the causes in the recipe's words (templates/profiles_report.html.j2)."""

from __future__ import annotations

import math
from pathlib import Path

from sdcompile._version import __version__
from sdcompile.catalogs import load
from sdcompile.core.profiles.ledger import MOVEMENT, TIME
from sdcompile.html.profiles import badge, heading, render_html, section, table, write_page
from sdcompile.html.svg import diverging_bars
from sdcompile.phases.benefit.render import amount, verdict
from sdcompile.phases.benefit.results import BenefitReport
from sdcompile.rendering.versions import versions_line

TOP = 20


def benefit_context(report: BenefitReport, subject: str = "", links: tuple[tuple[str, str], ...] = ()) -> dict:
    ledger, m = report.ledger, report.ledger.measure
    chosen = {TIME: ledger.time, MOVEMENT: ledger.movement}.get(m, ledger.launches)
    cards = [{"label": f"vanished per step ({m})", "value": amount(chosen.vanished, m)},
             {"label": f"appeared per step ({m})", "value": amount(chosen.appeared, m)},
             {"label": "net per step", "value": amount(ledger.net, m, sign=True)},
             {"label": "ceiling (the step's vector work)", "value": amount(ledger.ceiling, m)}]
    field = {TIME: "us", MOVEMENT: "bytes"}.get(m, "count")
    rows = ledger.rows[:TOP]
    sections = [section(
        f"Kernels whose launches changed, per step (top {len(rows)} of {len(ledger.rows)})",
        svg=diverging_bars([(r.key, getattr(r, f"on_{field}") - getattr(r, f"off_{field}")) for r in rows],
                           unit={TIME: "us", MOVEMENT: "B"}.get(m, ""), floor=0.02 * (ledger.step_total or 1)),
        table=table(["kernel", "family", "off n", "on n", f"off ({m})", f"on ({m})", "change"],
                    [[r.key, r.family, f"{r.off_count:,.4g}", f"{r.on_count:,.4g}",
                      amount(getattr(r, f"off_{field}"), m), amount(getattr(r, f"on_{field}"), m), r.change]
                     for r in rows], numeric={2, 3, 4, 5}, names={0}))]
    if report.side_effects:
        sections.append(section("Side effects: kernels the fusion brought besides its own", table=table(
            ["kernel", "+n per step", "per site", "where, per step", "size vs fused", "cause"],
            [[e.row.key, f"{e.row.delta_count:+,.4g}", _ratio(e.per_site),
              "; ".join(f"{p.launches:,.4g} {p.side} ({p.before_type or 'start'} → it → {p.after_type or 'end'})"
                        for p in e.placements) or e.side, _ratio(e.size_ratio), e.cause or "-"]
             for e in report.side_effects], numeric={1, 2, 4}, names={0})))
    kernels = [*report.fused_sites, *((e.row.key, e.sites) for e in report.side_effects if e.sites)]
    if kernels:
        sections.append(section("Where the new kernels come from: graph node, submodule, model line", table=table(
            ["kernel", "per step", "graph node (op)", "submodule", "model line"],
            [[key, f"{s.launches:,.4g}", f"{s.node} ({s.op})", s.module_path or "-", s.source or "-"]
             for key, sites in kernels for s in sites], numeric={1}, names={0, 2})))
    words = {c["code"]: c for c in load("benefit_causes")["cause"]}
    for c in report.causes:
        w = words[c.code]
        sections.append(section(f"{c.code} {w['title']}: {', '.join(c.kernels)}",
                                paragraphs=[f"Evidence: {w['evidence']}.", f"Why: {w['mechanism']}.",
                                            f"Fix: {w['fix']}."], notes=list(c.fallback_lines)))
    notes = list(report.notes)
    if m != TIME:
        notes.append(f"Weighed by {m}: these are CPU captures, whose durations are CPU times.")
    if notes:
        sections.append(section("Notes", notes=notes))
    word = verdict(report).word
    badges = [badge(f"verdict: {report.verdict}", "pass" if word == "PASS" else "fail")]
    badges += [badge(c.code, "other") for c in report.causes]
    return {**heading("benefit", subject or ("--op " + "/".join(report.ops)), report.device, links),
            "subtitle": f"off: {report.off.path} — on: {report.on.path} — device: {report.device}",
            "versions": versions_line(report.versions, target=False), "badges": badges, "cards": cards,
            "sections": sections, "command": "benefit", "version": __version__}


def _ratio(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.2f}x"


def write_benefit_html(report: BenefitReport, path: Path, force: bool = False, subject: str = "",
                       links: tuple[tuple[str, str], ...] = ()) -> None:
    write_page(render_html(benefit_context(report, subject, links)), path, force)
