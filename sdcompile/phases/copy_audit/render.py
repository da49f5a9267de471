"""Rendering of `sdcompile copy-audit`."""

from __future__ import annotations

from rich import box as boxes
from rich.console import Console
from rich.markup import escape

from sdcompile.core.profiles.advice import CONFIG_IMPORT, Option, Recommendation
from sdcompile.core.profiles.copies import CopyBreakdown
from sdcompile.core.profiles.read import EXACT
from sdcompile.phases.copy_audit.results import CopyAuditReport, Gate
from sdcompile.rendering.closing import Verdict, close
from sdcompile.rendering.profiles import (
    SEGMENT_NOTE,
    SHARE_BASIS,
    ratio,
    render_notes,
    render_sides,
    segment_text,
    signed,
    styled,
    us,
)
from sdcompile.rendering.tables import FitTable, Folded, fold_alike
from sdcompile.rendering.versions import versions_line
from sdcompile.util.log import verbosity

TOP = 15
# a line under the header and no frame: the report's tables fit on one screen
COMPACT = {"box": boxes.SIMPLE_HEAD, "show_edge": False}


def render_copy_audit(console: Console, report: CopyAuditReport, top: int = TOP) -> None:
    """The report a reader takes in at once: what differs, folded where alike; -v adds every rule, row and remedy
    detail (the HTML report and --json always have them)."""
    full = verbosity() > 0
    render_sides(console, report.eager, report.compiled)
    e, c = report.eager_copies, report.compile_copies
    console.print(_summary_table(e, c, full))
    if full:
        console.print(_by_rule_table(e, c))
    console.print(_grew_table(report, top, full))
    if len(c.per_rank) > 1 or len(e.per_rank) > 1:
        console.print(_per_rank_table(e, c))
    if c.per_step or e.per_step:
        console.print(_per_step_table(e, c))
    if c.per_segment or e.per_segment:  # both sides, segment by segment: either may lack attention kernels
        console.print(_per_segment_table(e, c))
        console.print(SEGMENT_NOTE, highlight=False)
    if full or e.ordering != EXACT or c.ordering != EXACT or not (e.per_segment and c.per_segment):
        console.print(f"per layer: {segment_text('eager', e)}; {segment_text('compile', c)}", highlight=False)
    _render_recommendation(console, report.recommendation, full)
    _render_gate(console, report.gate)
    render_notes(console, report.notes)
    console.print(f"device: {report.device}; catalog: {', '.join(report.catalog)}", highlight=False)
    console.print(versions_line(report.versions, target=False), highlight=False)
    close(console, verdict(report))


def verdict(report: CopyAuditReport) -> Verdict:
    """The closing verdict, in the words verify and run close with: PASS/FAIL against --max-inflation, INFO
    without one; then the advice."""
    g = report.gate
    counts = f"copy kernels {report.eager_copies.copy.count} -> {report.compile_copies.copy.count}"
    inflation = f"copy {g.metric} inflation {ratio(g.value, g.undefined)}"
    if g.max_inflation is None:
        return Verdict("INFO", f"{counts}, {inflation} (no gate: --max-inflation not set) — "
                               f"{advice_headline(report.recommendation)}")
    word, compared = ("PASS", "<=") if g.verdict == "pass" else ("FAIL", ">")
    return Verdict(word, f"{counts}, {inflation} {compared} max {g.max_inflation:g} — "
                         f"{advice_headline(report.recommendation)}")


def _summary_table(e: CopyBreakdown, c: CopyBreakdown, full: bool) -> FitTable:
    """Copies, the kernels counted beside them, and the copy share; rows that are zero on both sides and the rule
    behind each row only with -v."""
    summary = FitTable(title="Copy kernels" + ("" if full else " (-v: the catalog rule behind each number)"),
                       title_justify="left", **COMPACT)
    for col in ("what", *(("rule",) if full else ()), "eager n", "eager us", "compile n", "compile us",
                "time ratio"):
        summary.add_column(col, overflow="fold", justify="left" if col in ("what", "rule") else "right")
    rows = [
        ("copy kernels", "catalog families with role copy", e.copy, c.copy),
        ("dtype casts via InplaceCopy", "reported beside, not in copies", e.cast, c.cast),
        ("other layout", "TransData/BroadcastTo/Identity, beside", e.layout, c.layout),
        ("recipe's search list", "Name or Type contains InplaceCopy/ViewCopy/TensorMove/StridedSlice", e.recipe_search,
         c.recipe_search),
    ]
    for what, rule, a, b in rows:
        differs = what != "recipe's search list" or (a.count, b.count) != (e.copy.count, c.copy.count)
        if full or what == "copy kernels" or ((a.count or b.count) and differs):
            summary.add_row(what, *((rule,) if full else ()), f"{a.count:,}", us(a.us), f"{b.count:,}", us(b.us),
                            ratio(b.us / a.us) if a.us else ("inf" if b.us else "-"))
    rule = ("",) if full else ()
    summary.add_row("kernel time (all)", *rule, f"{e.kernel_count:,}", us(e.kernel_us), f"{c.kernel_count:,}",
                    us(c.kernel_us), "")
    if full or e.communication_us or c.communication_us:
        summary.add_row("communication (HCCL)", *(("families with role communication",) if full else ()), "",
                        us(e.communication_us), "", us(c.communication_us), "")
    summary.add_row("copy share", *((SHARE_BASIS,) if full else ()), f"{e.count_share:.1%}", f"{e.share:.1%}",
                    f"{c.count_share:.1%}", f"{c.share:.1%}", "")
    return summary


def _by_rule_table(e: CopyBreakdown, c: CopyBreakdown) -> FitTable:
    by_rule = FitTable(title="By rule (each number and the catalog rule that produced it)", title_justify="left")
    for col in ("side", "family", "rule", "n", "us"):
        by_rule.add_column(col, overflow="fold", justify="right" if col in ("n", "us") else "left")
    for side, b in (("eager", e), ("compile", c)):
        for r in b.by_rule:
            by_rule.add_row(side, r.family, r.rule, f"{r.count:,}", us(r.us))
    return by_rule


def _grew_table(report: CopyAuditReport, top: int, full: bool) -> FitTable:
    grew = FitTable(title=f"Copy kernels that grew most (top {top})", title_justify="left", **COMPACT)
    columns = ("kernel", "op type", "eager n", "eager us", "compile n", "compile us", "delta us") if full else \
        ("kernel", "eager n", "compile n", "delta us")
    for col in columns:
        grew.add_column(col, overflow="fold", justify="left" if col in ("kernel", "op type") else "right")
    for g in report.inflation.grew_most[:top]:
        cells = {"kernel": g.name, "op type": g.op_type, "eager n": f"{g.eager_count:,}", "eager us": us(g.eager_us),
                 "compile n": f"{g.compile_count:,}", "compile us": us(g.compile_us), "delta us": signed(g.delta_us)}
        grew.add_row(*(cells[col] for col in columns))
    return grew


def _per_rank_table(e: CopyBreakdown, c: CopyBreakdown) -> FitTable:
    """Each side's ranks; a run of ranks with the same copy count folds to its first and last (-v: all), as steps
    and segments do: a 64-rank job's table is as long as its ranks differ."""
    rows = [(side, r) for side, b in (("eager", e), ("compile", c)) for r in b.per_rank]
    shown = fold_alike(rows, key=lambda row: (row[0], row[1].copy_count), keep_all=verbosity() > 0)
    ranks = FitTable(title="Per rank" + (" (ranks with the same copy count as their neighbours folded, -v: all)"
                                         if any(isinstance(row, Folded) for row in shown) else ""),
                     title_justify="left", **COMPACT)
    for col in ("side", "rank", "copy n", "copy us", "share"):
        ranks.add_column(col, justify="left" if col in ("side", "rank") else "right")
    last = None
    for row in shown:
        if isinstance(row, Folded):
            ranks.add_row(last[0], f"… {row.count} alike", f"{last[1].copy_count:,}", "…", "…")
            continue
        side, r = last = row
        ranks.add_row(side, r.rank, f"{r.copy_count:,}", us(r.copy_us), f"{r.share:.1%}")
    return ranks


def _per_step_table(e: CopyBreakdown, c: CopyBreakdown) -> FitTable:
    eager, compiled = {s.step: s for s in e.per_step}, {s.step: s for s in c.per_step}
    rows = [(n, eager.get(n), compiled.get(n)) for n in sorted(eager.keys() | compiled.keys())]
    return _side_by_side("Copies per step (all ranks)", "step", "steps", rows, absent="-")  # a step one side lacks


def _per_segment_table(e: CopyBreakdown, c: CopyBreakdown) -> FitTable:
    eager, compiled = {s.segment: s for s in e.per_segment}, {s.segment: s for s in c.per_segment}
    rows = [(n, eager.get(n), compiled.get(n)) for n in sorted(eager.keys() | compiled.keys())]
    # a segment one side lists no copies in has none there
    return _side_by_side("Copies per attention segment (layer)", "segment", "segments", rows, absent="0")


def _side_by_side(title: str, label: str, plural: str, rows: list, absent: str) -> FitTable:
    """One row per step or segment, eager beside compile; runs of rows with the same copy counts on both sides
    fold to their first and last (-v keeps them all), so the table stays short however long the run."""
    def count(side) -> str:
        return f"{side.copy_count:,}" if side is not None else absent

    def time(side) -> str:
        return us(side.copy_us) if side is not None else absent

    shown = fold_alike(rows, key=lambda r: (count(r[1]), count(r[2])), keep_all=verbosity() > 0)
    folded = sum(r.count for r in shown if isinstance(r, Folded))
    if folded:
        title += f": {folded} of {len(rows)} {plural} with the same copy counts as their neighbours folded (-v: all)"
    table = FitTable(title=title, title_justify="left", **COMPACT)
    for col in (label, "eager n", "eager us", "compile n", "compile us"):  # of copy kernels, as the title says
        table.add_column(col, justify="right")
    last = None
    for row in shown:
        if isinstance(row, Folded):
            table.add_row(f"… {row.count} alike", count(last[1]), "…", count(last[2]), "…")
            continue
        n, es, cs = last = row
        table.add_row(str(n), count(es), time(es), count(cs), time(cs))
    return table


def advice_headline(rec: Recommendation) -> str:
    """The advice in one sentence: the remedies to try in order, or keep the compile as it is."""
    if not rec.offered:
        return ("keep the compile as it is: no Copy inflation beyond the thresholds" if rec.choice == "keep"
                else "Copy inflation found, but the target's CompilationConfig offers none of the remedies")
    titles = {o.id: o.title for o in rec.options}
    steps = [f"{i} ({titles[i]})" for i in rec.offered]
    text = "try " + ", then ".join(steps)
    if rec.patterns_missed:
        text += "; the patterns hit nothing, so A starts at the first mismatch (sdcompile debug)"
    return text


def config_source_line(rec: Recommendation) -> str:
    """Where the remedies' CompilationConfig fields were read."""
    c = rec.config
    if c.from_tree:
        return f"remedies offered from the CompilationConfig fields of {c.source}"
    why = c.problem or "no MindIE-SD tree found (pass --repo or set $SDCOMPILE_REPO)"
    return f"remedies offered from {c.source}: {why}"


def remedy_lines(o: Option) -> list[str]:
    """A remedy as plain lines: what it does, the pasteable settings, and what to read next."""
    lines = [f"{o.id} {o.title} — {o.mechanism}", f"  when: {o.when}"]
    if o.settings:
        lines.append(f"  settings ({CONFIG_IMPORT}):")
        for st in o.settings:
            lines += [f"    {st.field}: {st.effect}", f"      {st.line}"]
    if o.command == "debug":
        lines.append("  where a pattern missed: sdcompile debug (its mismatch types: sdcompile explain mismatch)")
    if o.caveat:
        lines.append(f"  caveat: {o.caveat}")
    return lines


def remedy_short(o: Option) -> list[str]:
    """A remedy in brief: its title (with the command that helps), then its first setting, a line of code."""
    helps = ": where a pattern missed, sdcompile debug" if o.command == "debug" else ""
    return [f"{o.id} {o.title}{helps}", *(f"      {o.settings[0].line}" for _ in o.settings[:1])]


def _render_recommendation(console: Console, rec: Recommendation, full: bool) -> None:
    console.print(f"\n[bold]Recommendation:[/] {escape(advice_headline(rec))}", highlight=False)
    for reason in rec.reasons:
        console.print(f"  - {escape(reason)}", highlight=False)
    for o in rec.options:
        if o.id in rec.offered:
            for line in remedy_lines(o) if full else remedy_short(o):
                # a setting's line is code: never wrapped, so it pastes whole
                console.print(f"  {escape(line)}", highlight=False, soft_wrap=line.startswith("      "))
    if rec.offered and not full:
        console.print("  (-v: how each works, when to take it, its settings and caveats)", highlight=False)
    missing = [f"{o.id} ({o.title}): no {', '.join(o.missing)} in CompilationConfig" for o in rec.options
               if not o.offered]
    if missing:
        console.print(f"  not offered: {escape('; '.join(missing))}", highlight=False)
    if not rec.offered:
        console.print("  remedies if copies grow: " + escape("; ".join(f"{o.id}: {o.title}" for o in rec.options
                                                                      if o.offered)), highlight=False)
    console.print(f"  {escape(config_source_line(rec))}", highlight=False)
    if full:
        console.print(f"  {rec.heuristic_note}", highlight=False)


def _render_gate(console: Console, g: Gate) -> None:
    gate_text = (f"gate: copy {g.metric} inflation {ratio(g.value, g.undefined)} vs max {g.max_inflation:g}: "
                 f"{styled(g.verdict)}" if g.max_inflation is not None else
                 "gate: not set (--max-inflation X makes this a CI gate)")
    console.print(f"{gate_text}; compared by {g.metric} ({g.metric_from})", highlight=False)
