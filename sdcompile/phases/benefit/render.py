"""Rendering of `sdcompile benefit`: the ledger (vanished, appeared, net, ceiling), the side effects placed, the
causes R1-R5 in the recipe's words (catalogs/benefit_causes.toml), and one verdict line."""

from __future__ import annotations

import math

from rich.console import Console
from rich.markup import escape

from sdcompile.catalogs import load
from sdcompile.core.profiles.ledger import MOVEMENT, TIME, Ledger, LedgerRow
from sdcompile.core.profiles.side_effects import R1, R2, R3, R4, R5, X_SIZED, Cause, SideEffect
from sdcompile.phases.benefit.results import BOOKKEEPING, GAINS, LOSES, NO_FUSION, WITHIN, BenefitReport
from sdcompile.rendering.closing import Verdict, close
from sdcompile.rendering.data_moved import byte_size
from sdcompile.rendering.profiles import render_notes, render_sides
from sdcompile.rendering.tables import FitTable
from sdcompile.rendering.versions import versions_line
from sdcompile.util.log import verbosity

TOP = 12
SITES = 3  # graph nodes shown per new kernel (-v: all)


def amount(value: float, measure: str, sign: bool = False) -> str:
    """A quantity of the ledger's measure as printed: us, bytes (KB/MB/GB) or launches."""
    if value is None or math.isnan(value):
        return "n/a"
    plus = "+" if sign and value > 0 else ""
    if measure == TIME:
        return f"{plus}{value:,.1f} us"
    if measure == MOVEMENT:
        return plus + byte_size(value)
    return f"{plus}{value:,.4g} launches"


def _of(row: LedgerRow, measure: str, side: str) -> float:
    field = {TIME: "us", MOVEMENT: "bytes"}.get(measure, "count")
    return getattr(row, f"{side}_{field}")


def render_benefit(console: Console, report: BenefitReport, top: int = TOP) -> None:
    ledger = report.ledger
    render_sides(console, report.off, report.on, labels=("off", "on"))
    _changed(console, ledger, top)
    _families(console, ledger)
    if report.side_effects:
        _side_effects(console, report.side_effects, ledger.measure)
    _sites(console, report)
    _causes(console, report.causes, ledger.measure)
    _hits(console, report)
    _totals(console, report)
    render_notes(console, report.notes)
    if report.left_out:
        console.print(f"the off side was compiled without {', '.join(report.left_out)}", highlight=False)
    if report.raising:
        console.print(f"both sides were compiled without {', '.join(report.raising)}: it raises on this model "
                      "(`sdcompile integrate --model` names its switch)", highlight=False)
    console.print(f"device: {report.device}; catalog: {', '.join(report.catalog)}", highlight=False)
    console.print(versions_line(report.versions, target=False), highlight=False)
    close(console, verdict(report))


def _changed(console: Console, ledger: Ledger, top: int) -> None:
    shown = ledger.rows if verbosity() else ledger.rows[:top]
    unit = {TIME: "us", MOVEMENT: "moved"}.get(ledger.measure, "launches")
    table = FitTable(title=f"Kernels whose launches changed, per step ({len(shown)} of {len(ledger.rows)}; -v: all)",
                     title_justify="left", show_edge=False)
    for col in ("kernel", "family", "off n", "on n", f"off {unit}", f"on {unit}", "change"):
        table.add_column(col, overflow="fold", justify="left" if col in ("kernel", "family", "change") else "right")
    for r in shown:
        table.add_row(escape(r.key), r.family, f"{r.off_count:,.4g}", f"{r.on_count:,.4g}",
                      amount(_of(r, ledger.measure, "off"), ledger.measure),
                      amount(_of(r, ledger.measure, "on"), ledger.measure), r.change)
    console.print(table)


def _families(console: Console, ledger: Ledger) -> None:
    """The same changes rolled up per kernel family (the catalog's), launches and kernel time per step."""
    table = FitTable(title="By family, per step" + ("" if ledger.measure == TIME else " (time: CPU times)"),
                     title_justify="left", show_edge=False)
    for col in ("family", "appeared n", "vanished n", "appeared us", "vanished us", "net us"):
        table.add_column(col, justify="left" if col == "family" else "right")
    for f in ledger.families:
        table.add_row(f.title, f"{f.appeared_count:,.4g}", f"{f.vanished_count:,.4g}", f"{f.appeared_us:,.1f}",
                      f"{f.vanished_us:,.1f}", f"{f.net_us:+,.1f}")
    console.print(table)


def _side_effects(console: Console, effects: tuple[SideEffect, ...], measure: str) -> None:
    table = FitTable(title="Side effects: kernels the fusion brought besides its own", title_justify="left",
                     show_edge=False)
    for col in ("kernel", "+n/step", "per site", "where, per step", "size vs fused", "cause"):
        table.add_column(col, overflow="fold")
    for e in effects:
        where = "; ".join(f"{p.launches:,.4g} {p.side} ({p.before_type or 'start'} -> it -> {p.after_type or 'end'})"
                          for p in e.placements) or e.side
        small = not e.cause and e.size_ratio < X_SIZED
        table.add_row(escape(e.row.key), f"{e.row.delta_count:+,.4g}", _ratio(e.per_site), escape(where),
                      _ratio(e.size_ratio), e.cause or ("- (small: a weight or table)" if small else "-"))
    console.print(table)


def _sites(console: Console, report: BenefitReport) -> None:
    """The graph node and model line behind each new kernel (profiles of a forward sdcompile compiled)."""
    kernels = [*report.fused_sites, *((e.row.key, e.sites) for e in report.side_effects if e.sites)]
    if not kernels:
        return
    console.print("Where the new kernels come from, per step (graph node, submodule, model line):", highlight=False)
    for key, sites in kernels:
        shown = sites if verbosity() else sites[:SITES]
        more = f", {len(shown)} shown (-v: all)" if len(shown) < len(sites) else ""
        console.print(f"  {escape(key)}: {len(sites)} node(s){more}", highlight=False)
        for s in shown:
            module = f" in {s.module_path}" if s.module_path else ""
            console.print(f"    {s.launches:,.4g} x {escape(s.node)} ({escape(s.op)}){escape(module)}", highlight=False)
            console.print(f"      {escape(s.source or 'no model line recorded')}", highlight=False)


def _hits(console: Console, report: BenefitReport) -> None:
    if report.hits is None:
        console.print("pattern hits: not known (pass --hits, or weigh two profiles `sdcompile profile` made): "
                      "R4 rests on --log's fallback prints alone", highlight=False)
    else:
        console.print(f"pattern hits the on side added: {report.hits:,.4g} per step (from {report.hits_from})",
                      highlight=False)


def _ratio(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.2f}x"


def _causes(console: Console, causes: tuple[Cause, ...], measure: str) -> None:
    words = {c["code"]: c for c in load("benefit_causes")["cause"]}
    for c in causes:
        w = words[c.code]
        console.print(f"[bold]{c.code} {w['title']}[/]: {escape(_evidence(c, measure))}", highlight=False)
        console.print(f"  why: {escape(w['mechanism'])}", highlight=False)
        console.print(f"  fix: {escape(w['fix'])}", highlight=False)


def _evidence(c: Cause, measure: str) -> str:
    kernels = ", ".join(c.kernels)
    if c.code in (R1, R2, R3):
        return (f"{kernels}: {c.launches:+,.4g} launch(es) per step, {_ratio(c.per_site)} per fused launch gained, "
                f"costing {amount(c.amount, measure)}")
    if c.code == R4:
        short = f"{c.launches:,.4g} fused launch(es) per step short of the pattern hits" if c.launches else ""
        prints = f"the log prints {'; '.join(c.fallback_lines[:3])}" if c.fallback_lines else ""
        return f"{kernels}: " + "; ".join(x for x in (short, prints) if x)
    assert c.code == R5
    return f"{kernels} outweigh what they replaced by {amount(c.amount, measure)} per step"


def _totals(console: Console, report: BenefitReport) -> None:
    ledger, m = report.ledger, report.ledger.measure
    chosen = {TIME: ledger.time, MOVEMENT: ledger.movement}.get(m, ledger.launches)
    share = f" ({report.share:+.1%} of the off side's step)" if ledger.step_total else ""
    region = chosen.ceiling / chosen.step if chosen.step else math.nan
    console.print(f"ledger per step, by {m}: vanished {amount(chosen.vanished, m)}, appeared "
                  f"{amount(chosen.appeared, m)}, net {amount(ledger.net, m, sign=True)}{share}; ceiling "
                  f"{amount(ledger.ceiling, m)} (the step's vector work, "
                  f"{'n/a' if math.isnan(region) else f'{region:.1%}'} of the step: all a fusion can remove)",
                  highlight=False)
    if m != TIME:
        console.print(f"weighed by {m}: these are CPU captures, whose durations are CPU times (kernel time net "
                      f"{ledger.time.net:+,.1f} us, shown for reference only)", highlight=False)


def verdict(report: BenefitReport) -> Verdict:
    ledger, m = report.ledger, report.ledger.measure
    what = f"benefit --op {'/'.join(report.ops)}" if report.ops else "benefit"
    causes = ", ".join(c.code for c in report.causes)
    because = f", because of {causes}" if causes else ""
    if report.verdict == NO_FUSION:
        return Verdict("FAIL", f"{what}: the ON profile launches no fused kernel of the op: nothing to weigh (run "
                               "`sdcompile integrate` for the hits)")
    if report.verdict == BOOKKEEPING:
        return Verdict("FAIL", f"{what}: a gain of {amount(-ledger.net, m)} per step exceeds all the step's vector "
                               f"work ({amount(ledger.ceiling, m)}): a bookkeeping error (the two profiles launch "
                               "other work), not a result")
    if report.verdict == GAINS:
        return Verdict("PASS", f"{what}: gains {amount(-ledger.net, m)} per step ({-report.share:.1%} of the step, "
                               f"by {m}){because}")
    assert report.verdict in (WITHIN, LOSES)
    within = "within" if report.verdict == WITHIN else "beyond"
    return Verdict("PASS" if report.verdict == WITHIN else "FAIL",
                   f"{what}: loses {amount(ledger.net, m)} per step ({report.share:.1%} of the step, by {m}; {within} "
                   f"--max-regression {report.max_regression:g}%){because}")


