"""Self-contained HTML reports for integrate and copy-audit: per-kernel time deltas and the copy breakdown as
inline SVG bars plus the tables behind them (templates/profiles_report.html.j2)."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path
from typing import Any

from sdcompile._version import __version__
from sdcompile.core.profiles.profile import ProfileSummary
from sdcompile.html.svg import diverging_bars, paired_bars
from sdcompile.phases.copy_audit.render import advice_headline, config_source_line, remedy_lines
from sdcompile.phases.copy_audit.results import CopyAuditReport
from sdcompile.phases.integrate.results import IntegrateReport
from sdcompile.rendering.profiles import SEGMENT_NOTE, segment_text
from sdcompile.rendering.versions import versions_line
from sdcompile.util.errors import BadInput
from sdcompile.util.fsutil import atomic_write_text
from sdcompile.util.input_checks import check_output_file

TOP = 20
SEGMENT_BARS = 60
FLOOR = 0.02  # a delta chart's full bar stands for at least this share of the profile's total (time or kernels)


def badge(text: str, verdict: str) -> dict:
    css = {"pass": "pass", "fail": "fail"}.get(verdict, "other" if verdict in ("unconfirmed", "incomplete") else
                                               "neutral")
    return {"text": text, "css": css}


def _f(value: float) -> str:
    return f"{value:,.1f}"


def _ratio(value: float, undefined: bool = False) -> str:
    from sdcompile.core.profiles.copies import shown_ratio

    return shown_ratio(value, undefined)


def table(headers: list[str], rows: list[list[Any]], numeric: set[int] = frozenset(), names: set[int] = frozenset()):
    css = ["num" if i in numeric else ("name" if i in names else "") for i in range(len(headers))]
    return {"headers": headers, "rows": rows, "css": css}


def section(heading: str, *, paragraphs: list[str] = (), svg: str = "", table: dict | None = None,
             notes: list[str] = ()) -> dict:
    paras = [{"text": p, "css": ""} for p in paragraphs] + [{"text": n, "css": "note"} for n in notes]
    return {"heading": heading, "paragraphs": paras, "svg": svg, "table": table}


def _sides(eager: ProfileSummary, compiled: ProfileSummary) -> dict:
    rows = []
    for side, p in (("eager", eager), ("compile", compiled)):
        for r in p.ranks:
            rows.append([side, r.label, r.variant, f"{r.rows:,}", _f(r.kernel_us), p.source, r.path])
    return section("Profiles", table=table(["side", "rank", "header variant", "rows", "kernel time (us)", "source",
                                              "file"], rows, numeric={3, 4}, names={6}))


def integrate_context(report: IntegrateReport, top: int = TOP, subject: str = "",
                      links: tuple[tuple[str, str], ...] = ()) -> dict:
    """The template's context; `subject` names what was compared ("flux / rmsnorm"), `links` (label, href) the
    reports beside this one."""
    sections = []
    sections.append(section("Layers", table=table(
        ["layer", "verdict", "evidence", "detail"],
        [[f"{x.number} {x.name}", x.verdict, x.evidence, x.detail] for x in report.layers])))
    cards = []
    if report.diff is not None:
        d = report.diff
        top_rows = list(d.by_name[:top])
        cards = [{"label": "kernel time eager (us)", "value": _f(d.eager_us)},
                 {"label": "kernel time compile (us)", "value": _f(d.compile_us)},
                 {"label": "eager-only kernels", "value": str(len(d.eager_only))},
                 {"label": "compile-only kernels", "value": str(len(d.compile_only))}]
        sections.append(section(
            f"Per-kernel time deltas (top {len(top_rows)} of {len(d.by_name)} by |delta|)",
            notes=_time_caveat(report.eager, report.compiled),
            svg=diverging_bars([(r.key, r.delta_us) for r in top_rows], floor=FLOOR * max(d.eager_us, d.compile_us)),
            table=table(["kernel", "op type", "family", "eager n", "eager us", "compile n", "compile us", "delta us",
                          "status"],
                         [[r.key, r.op_type, r.family, f"{r.eager_count:,}", _f(r.eager_us), f"{r.compile_count:,}",
                           _f(r.compile_us), f"{r.delta_us:+,.1f}", r.status] for r in top_rows],
                         numeric={3, 4, 5, 6, 7}, names={0})))
        sections.append(section(
            "By family", notes=_time_caveat(report.eager, report.compiled),
            svg=paired_bars([(r.key, r.eager_us, r.compile_us) for r in d.by_family]),
            table=table(["family", "eager n", "eager us", "compile n", "compile us", "delta us"],
                         [[r.key, f"{r.eager_count:,}", _f(r.eager_us), f"{r.compile_count:,}", _f(r.compile_us),
                           f"{r.delta_us:+,.1f}"] for r in d.by_family], numeric={1, 2, 3, 4, 5})))
    if report.op_check is not None:
        oc = report.op_check
        rows = [[t.op_type, "fused", f"{t.eager_count:,}", f"{t.compile_count:,}"] for t in oc.fused]
        rows += [[t.op_type, "eager chain" + (" (signature)" if t.op_type in oc.signature else ""),
                  f"{t.eager_count:,}", f"{t.compile_count:,}"] for t in oc.chain]
        sections.append(section(f"{oc.title}: fused kernel and eager chain ({oc.verdict})", paragraphs=[oc.reason],
                                 table=table(["kernel type", "role", "eager n", "compile n"], rows, numeric={2, 3})))
    if report.eager and report.compiled:
        sections.append(_sides(report.eager, report.compiled))
    if report.notes:
        sections.append(section("Notes", notes=list(report.notes)))
    badges = [badge(f"verdict: {report.verdict}", report.verdict)]
    badges += [badge(f"layer {x.number}: {x.verdict}", x.verdict) for x in report.layers]
    return {**heading("integrate", subject or (f"--op {report.op}" if report.op else ""), report.device, links),
            "subtitle": _subtitle(report.device, report.eager, report.compiled),
            "versions": versions_line(report.versions, target=report.model_compile is not None), "badges": badges,
            "cards": cards, "sections": sections, "command": "integrate", "version": __version__}


def copy_audit_context(report: CopyAuditReport, top: int = TOP, subject: str = "",
                       links: tuple[tuple[str, str], ...] = ()) -> dict:
    """The template's context; the charts show what the gate compares (counts when it compares counts)."""
    e, c, infl = report.eager_copies, report.compile_copies, report.inflation
    cards = [
        {"label": "copy kernels eager → compile", "value": f"{e.copy.count:,} → {c.copy.count:,}"},
        {"label": "copy time (us) eager → compile", "value": f"{_f(e.copy.us)} → {_f(c.copy.us)}"},
        {"label": "inflation time / count", "value": f"{_ratio(infl.time_ratio, infl.time_undefined)} / "
                                                     f"{_ratio(infl.count_ratio, infl.count_undefined)}"},
        {"label": "copy share (of non-communication time) eager → compile", "value": f"{e.share:.1%} → {c.share:.1%}"},
    ]
    sections = []
    rec = report.recommendation
    paras = [advice_headline(rec), *[f"• {r}" for r in rec.reasons]]
    for o in rec.options:
        if o.id in rec.offered:
            paras += remedy_lines(o)
    sections.append(section("Recommendation", paragraphs=paras, notes=[config_source_line(rec), rec.heuristic_note],
                             table=table(["remedy", "when", "offered"],
                                          [[f"{o.id}: {o.title}", o.when, "yes" if o.offered else
                                            f"no: no {', '.join(o.missing)} in CompilationConfig"]
                                           for o in rec.options])))
    summary_rows = []
    for what, rule, a, b in (("copy kernels", "families with role copy", e.copy, c.copy),
                             ("dtype casts via InplaceCopy", "beside, not in copies", e.cast, c.cast),
                             ("other layout", "TransData/BroadcastTo/Identity", e.layout, c.layout),
                             ("recipe's search list", "Name/Type has InplaceCopy, ViewCopy, TensorMove, StridedSlice",
                              e.recipe_search, c.recipe_search)):
        summary_rows.append([what, rule, f"{a.count:,}", _f(a.us), f"{b.count:,}", _f(b.us)])
    by_count = report.gate.metric == "count"
    pick = (lambda part: float(part.count)) if by_count else (lambda part: part.us)
    unit, digits = ("kernels", 0) if by_count else ("us", 1)
    caveat = [] if by_count else _time_caveat(report.eager, report.compiled)
    sections.append(section("Copy breakdown", notes=caveat, svg=paired_bars(
        [(what, pick(a), pick(b)) for what, a, b in (("copy kernels", e.copy, c.copy),
                                                     ("casts via InplaceCopy", e.cast, c.cast),
                                                     ("other layout", e.layout, c.layout),
                                                     ("recipe's search list", e.recipe_search, c.recipe_search))],
        unit=unit, digits=digits),
        table=table(["what", "rule", "eager n", "eager us", "compile n", "compile us"], summary_rows,
                     numeric={2, 3, 4, 5})))
    grew = list(infl.grew_most[:top])
    deltas = [(g.name, float(g.compile_count - g.eager_count) if by_count else g.delta_us) for g in grew]
    total = max(e.copy.count, c.copy.count) if by_count else max(report.eager.kernel_us, report.compiled.kernel_us)
    sections.append(section(f"Copy kernels that grew most (top {len(grew)})", notes=caveat,
                             svg=diverging_bars(deltas, unit=unit, digits=digits, floor=FLOOR * total),
                             table=table(["kernel", "op type", "rule", "eager n", "eager us", "compile n",
                                           "compile us", "delta us"],
                                          [[g.name, g.op_type, g.rule, f"{g.eager_count:,}", _f(g.eager_us),
                                            f"{g.compile_count:,}", _f(g.compile_us), f"{g.delta_us:+,.1f}"]
                                           for g in grew], numeric={3, 4, 5, 6, 7}, names={0})))
    by_rule = [[side, r.family, r.rule, f"{r.count:,}", _f(r.us)] for side, b in (("eager", e), ("compile", c))
               for r in b.by_rule]
    sections.append(section("By rule", table=table(["side", "family", "rule", "n", "us"], by_rule, numeric={3, 4})))
    if c.per_step or e.per_step:
        steps = sorted({s.step for s in (*e.per_step, *c.per_step)})
        es, cs = {s.step: s for s in e.per_step}, {s.step: s for s in c.per_step}
        per = (lambda x: float(x.copy_count)) if by_count else (lambda x: x.copy_us)
        sections.append(section(f"Copy {'kernels' if by_count else 'time'} per step (all ranks)", svg=paired_bars(
            [(f"step {s}", per(es[s]) if s in es else 0.0, per(cs[s]) if s in cs else 0.0) for s in steps],
            unit=unit, digits=digits)))
    if c.per_segment or e.per_segment:
        segs = sorted({s.segment for s in (*e.per_segment, *c.per_segment)})[:SEGMENT_BARS]
        es2, cs2 = {s.segment: s for s in e.per_segment}, {s.segment: s for s in c.per_segment}
        shown = f" (first {SEGMENT_BARS})" if len(segs) == SEGMENT_BARS else ""
        seg_notes = [SEGMENT_NOTE, segment_text("eager", e), segment_text("compile", c)]
        per = (lambda x: float(x.copy_count)) if by_count else (lambda x: x.copy_us)
        sections.append(section(f"Copy {'kernels' if by_count else 'time'} per attention segment (layer){shown}",
                                 notes=seg_notes, svg=paired_bars(
            [(f"segment {s}", per(es2[s]) if s in es2 else 0.0, per(cs2[s]) if s in cs2 else 0.0) for s in segs],
            unit=unit, digits=digits)))
    if len(c.per_rank) > 1 or len(e.per_rank) > 1:
        sections.append(section("Per rank", table=table(
            ["side", "rank", "copy n", "copy us", "share"],
            [[side, r.rank, f"{r.copy_count:,}", _f(r.copy_us), f"{r.share:.1%}"]
             for side, b in (("eager", e), ("compile", c)) for r in b.per_rank], numeric={2, 3, 4})))
    sections.append(_sides(report.eager, report.compiled))
    g = report.gate
    sections.append(section("Notes", notes=[f"inflation compared by {g.metric} ({g.metric_from})",
                                             *report.notes]))
    shown = f" ({g.metric} inflation {_ratio(g.value, g.undefined)} vs max {g.max_inflation:g})" \
        if g.max_inflation is not None else ""
    badges = [badge(f"gate: {g.verdict}{shown}", g.verdict),
              badge(f"advice: {rec.choice}", "info")]
    return {**heading("copy-audit", subject, report.device, links),
            "subtitle": _subtitle(report.device, report.eager, report.compiled),
            "versions": versions_line(report.versions, target=False), "badges": badges, "cards": cards,
            "sections": sections, "command": "copy-audit", "version": __version__}


def heading(command: str, subject: str, device: str, links: tuple[tuple[str, str], ...]) -> dict:
    """The page's title (what was compared, on which device) and when it was made, and the reports beside it."""
    from datetime import datetime

    title = " — ".join(p for p in (f"sdcompile {command}", subject, device) if p)
    made = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return {"title": title, "generated": made, "links": [{"label": label, "href": href} for label, href in links]}


def _time_caveat(eager: ProfileSummary | None, compiled: ProfileSummary | None) -> list[str]:
    """Beside a chart of durations: what they are when a side is not an NPU profile."""
    from sdcompile.core.profiles.profile import NPU_PROFILE

    sides = [p for p in (eager, compiled) if p is not None and p.source != NPU_PROFILE]
    if not sides:
        return []
    return [f"Durations of a {sides[0].source}: CPU times of each op, which swing with the machine's load. Read them "
            "as relative sizes, not NPU times; sdcompile's gates compare kernel counts for such profiles."]


def _subtitle(device: str, eager: ProfileSummary | None, compiled: ProfileSummary | None) -> str:
    if eager is None or compiled is None:
        return f"device: {device}"
    step = f"; step {eager.step}" if eager.step is not None else ""
    return f"eager: {eager.path} — compile: {compiled.path} — device: {device} ({compiled.source}){step}"


def render_html(context: dict) -> str:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("sdcompile.templates", ""),
        undefined=jinja2.StrictUndefined,
        autoescape=True,
        trim_blocks=False,
    )
    return env.get_template("profiles_report.html.j2").render(**context)


def write_page(text: str, path: Path, force: bool) -> None:
    path = check_output_file(path, force, "--html")  # again: the path may have changed during the work
    try:
        atomic_write_text(path, text)
    except OSError as exc:
        raise BadInput(f"could not write {path} ({exc.strerror or exc})", "choose another --html path") from exc


def write_integrate_html(report: IntegrateReport, path: Path, force: bool = False, subject: str = "",
                         links: tuple[tuple[str, str], ...] = ()) -> None:
    write_page(render_html(integrate_context(report, subject=subject, links=links)), path, force)


def write_copy_audit_html(report: CopyAuditReport, path: Path, force: bool = False, subject: str = "",
                          links: tuple[tuple[str, str], ...] = ()) -> None:
    write_page(render_html(copy_audit_context(report, subject=subject, links=links)), path, force)
