"""Rendering of `sdcompile verify`: a rich table on stdout, and the Markdown report kept in the workspace."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from sdcompile.phases.verify.results import GroupResult, ModelLevel, UnitCase, VerifyReport
from sdcompile.rendering import npu_kernels
from sdcompile.rendering.closing import Verdict, close, print_commands
from sdcompile.rendering.data_moved import print_data_moved
from sdcompile.rendering.tables import FitTable
from sdcompile.rendering.versions import versions_line


def _cos(value: float | None) -> str:
    if value is None or value != value:
        return "n/a"
    return f"{value:.6f}"


def _num(value: float | None) -> str:
    if value is None or value != value:
        return "n/a"
    return f"{value:.3g}"


def _yes(flag: bool | None) -> str:
    return {True: "yes", False: "NO", None: "n/a"}[flag]


def _case_check(case: UnitCase) -> tuple[str, str]:
    g = case.graph
    if g is None:
        return "n/a", "n/a"
    fused = ", ".join(f"{op.split('.')[1]}×{n}" for op, n in g.fused_ops_found.items()) or "none expected"
    fused = fused if g.fused_present is not False else f"[red]{fused}[/]"
    left = "yes" if g.originals_gone else "[red]no: " + ", ".join(
        f"{k.removeprefix('aten.')}×{v}" for k, v in g.originals_left.items()) + "[/]"
    return fused, left


def _why_lines(case: UnitCase) -> list[str]:
    if case.error:
        return [f"error: {case.error}"]
    lines = []
    siblings = {k: v for k, v in case.hits_by_pattern.items() if k != case.pattern and v}
    if case.own_hits == 0 and siblings:
        lines.append("replaced by " + ", ".join(f"{k} ×{v}" for k, v in siblings.items()) + ", not by this pattern")
    if case.divergence is not None:
        d = case.divergence
        m = d.mismatch
        lines.append((f"type {m.type} ({m.name}, path {m.path}) at the {d.stage} match: " if m else f"{d.stage}: ")
                     + d.reason)
        if d.graph_node:
            lines.append(f"  graph:   {d.graph_node}")
        if d.pattern_node:
            lines.append(f"  pattern: {d.pattern_node}")
        if d.start:
            lines.append(f"  lined up: {d.matched} of {d.total} pattern ops from {d.start}; torch's matcher: "
                         f"{d.torch_message}")
        if m:
            lines.append(f"  fix: {m.fix}")
            lines += [f"  evidence: {e}" for e in _further_evidence(d)]
    elif case.numerics is not None and not case.numerics.passed:
        lines.append(f"cosine {_cos(case.numerics.cosine)} below {case.numerics.min_cosine}")
        if case.difference is not None:
            lines += _difference(case.difference)
    return lines


def _difference(d) -> list[str]:
    """Where the replacement differs from the search function, and where to fix it."""
    where = f"fix the replacement in {d.pattern_file}" if d.pattern_file else "fix the pattern's replacement"
    if d.role is not None:
        return [f"the replacement takes {d.role} as it comes; the search function computes "
                f"{' -> '.join(d.steps)} from it first (binding that value instead: cosine {_cos(d.bound_cosine)})",
                f"  {where}: the pattern matched, so debug has nothing to find"]
    if d.ignored:
        sides = "; ".join(f"the {'replacement' if side == 'replacement' else 'search function'} does not read {i}"
                          for i, side in d.ignored)
        return [sides, f"  {where}: the pattern matched, so debug has nothing to find"]
    if d.error:
        return [f"evaluating the replacement against the search function failed: {d.error}"]
    return ["no single input transform explains the difference: the fused op does not compute this chain",
            f"  {where}"]


def _further_evidence(d) -> list[str]:
    """The mismatch's evidence beyond what the lines above already show (the difference, both nodes, torch)."""
    shown = ("pattern: ", "model: ", "torch's matcher: ")
    return [e for e in d.mismatch.evidence if e != d.reason and not e.startswith(shown)]


def skipped_text(report: VerifyReport) -> str:
    """Phase 4's line for a pair scaffold left nothing to verify (the record's summary and the report's)."""
    return ("no group to verify: the model graph already calls the fused op at every site (diffusers' own NPU "
            "branch); integrate checks the fused kernel")


def render_verify(console: Console, report: VerifyReport) -> None:
    _header(console, report)
    if report.skipped:
        close(console, verdict(report))
        return
    if report.graph_pass is not None:
        _graph_pass(console, report)
        return
    table = FitTable(title="Unit level: each pattern against a module whose forward is its own search function",
                     head=2)
    for col in ("#", "group / pattern", "own/group hits (log)", "fused op after pass", "originals gone", "cosine",
                "max abs", "max rel", f"gate ≥{report.min_cosine:.6g}", f"upstream >{report.upstream_min_cosine:g}"):
        table.add_column(col, overflow="fold")
    for g in report.groups:
        _add_group_rows(table, g)
    console.print(table)
    _where_patterns_part(console, report)
    _shadowed(console, report)
    _model_level(console, report)
    _npu_kernels(console, report)
    print_data_moved(console, [(c.pattern, c.moved) for g in report.groups for c in g.unit if c.moved is not None])
    _timings(console, report)
    for note in report.notes:
        console.print(f"note: {note}", highlight=False)
    close(console, verdict(report))


def verdict(report: VerifyReport) -> Verdict:
    if report.skipped:
        return Verdict("INFO", skipped_text(report))
    word = "PASS" if report.passed else "FAIL"
    if report.graph_pass is not None:
        t = report.graph_pass
        return Verdict(word, f"graph pass test {t.test_file}: {t.last_line}. Report: {report.report_dir}")
    passed = sum(1 for g in report.groups if g.passed)
    return Verdict(word, f"{passed}/{len(report.groups)} group(s) pass. Report: {report.report_dir}")


def _graph_pass(console: Console, report: VerifyReport) -> None:
    """A custom graph pass: its generated test's outcome, and the command that reruns it."""
    t = report.graph_pass
    console.print(f"custom graph pass {escape(t.pass_class)} ({escape(t.pass_file)}): no pattern group to run alone, "
                  f"so its generated test ran: {escape(t.test_file)}", highlight=False)
    console.print(f"  pytest: {escape(t.last_line)}  [dim](output: {escape(t.log)})[/]", highlight=False)
    if not t.passed:
        print_commands(console, [t.command])
    close(console, verdict(report))


def _header(console: Console, report: VerifyReport) -> None:
    console.print(f"[bold]verify[/] — device: {report.device} ({report.device_reason})", highlight=False)
    console.print(f"target: MindIE-SD {report.target_version} at {report.target}; {report.target_package}",
                  highlight=False)
    console.print(versions_line(report), highlight=False)
    if report.npu_kernels:
        console.print(f"NPU kernels: {report.npu_kernels}", highlight=False, markup=False)
    broken = [m for m in report.pattern_modules if not m.ok]
    console.print(f"pattern modules: {len(report.pattern_modules) - len(broken)}/{len(report.pattern_modules)} "
                  "imported" + ("" if not broken else " — " + "; ".join(f"{m.module}: {m.error}" for m in broken)),
                  highlight=False)


def _where_patterns_part(console: Console, report: VerifyReport) -> None:
    """Every failing pattern (and group that did not load) with why."""
    why = [(c.pattern, _why_lines(c)) for g in report.groups for c in g.unit if not c.passed]
    why += [(g.group, [f"did not load: {g.load_error}"]) for g in report.groups if g.load_error]
    if not why:
        return
    console.print("[bold]Where the registered pattern and the traced graph part[/] (first disagreement, "
                  "walking from the pattern's output):", highlight=False)
    for name, lines in why:
        console.print(f"  {name}:", highlight=False, markup=False)
        for line in lines or ["no replacement"]:
            console.print(f"    {line}", highlight=False, markup=False)


def _shadowed(console: Console, report: VerifyReport) -> None:
    """Patterns that pass only because an earlier-registered sibling replaced their search function."""
    shadowed = [c for g in report.groups for c in g.unit if c.passed and not c.own_hits]
    if not shadowed:
        return
    console.print("[bold]Passed through an earlier-registered sibling pattern[/] (this variant itself never "
                  "matched):", highlight=False)
    for c in shadowed:
        console.print(f"  {c.pattern}: " + "; ".join(_why_lines(c)[:2]), highlight=False, markup=False)


def _model_level(console: Console, report: VerifyReport) -> None:
    models = [g for g in report.groups if g.model is not None]
    if not models:
        return
    mt = FitTable(title=f"Model level: {report.model} ({report.dtype})", title_justify="left")
    for col in ("group", "graphs", "replacements (log)", "sites", "cosine", "verdict", "note"):
        mt.add_column(col, overflow="fold")
    already = models[0].model.fused_ops_before_pass
    if already:
        console.print(f"fused ops already in {report.model}'s graph before the pass (the model called them "
                      "itself): " + ", ".join(f"{k}×{v}" for k, v in already.items()), highlight=False)
    for g in models:
        m = g.model
        verdict = "[green]pass[/]" if m.passed else "[red]fail[/]"
        mt.add_row(g.group, str(m.graphs), f"{m.replacements} ({', '.join(map(str, m.pass_log_counts))})",
                   _model_sites(m) or "-", _cos(m.numerics.cosine if m.numerics else None), verdict, _model_note(m))
    console.print(mt)


def _npu_kernels(console: Console, report: VerifyReport) -> None:
    """Each group's fused calls that do not pass on the NPU's kernels (unit and model level), with the fix."""
    for g in report.groups:
        levels = [(c.pattern, c.kernels) for c in g.unit] + ([(g.model.model, g.model.kernels)] if g.model else [])
        for where, sites in levels:
            said = npu_kernels.lines(sites, g.group, g.flag)
            if not said:
                continue
            console.print(f"[bold]On the NPU's kernels[/] — {escape(g.group)} on {escape(where)}:", highlight=False)
            for line in said:
                console.print(f"  {line}", highlight=False, markup=False)


def _model_sites(m: ModelLevel) -> str:
    sites = "\n".join(f"{s.module_path or s.node}" + (f" ← {s.source}" if s.source else "") for s in m.sites[:6])
    if len(m.sites) > 6:
        sites += f"\n… {len(m.sites) - 6} more"
    return sites


def numerics_note(n) -> str:
    """Why model-level numerics failed, or how a difference from eager past the tolerance was settled ("" when
    there is nothing to say)."""
    if n is None:
        return ""
    dtype = n.dtype.removeprefix("torch.")
    if not n.passed and n.cosine == n.cosine and n.cosine < n.min_cosine:
        return f"cosine {_cos(n.cosine)} below {n.min_cosine:.6g}"
    if n.within_tolerance:
        return ""
    off = f"{n.outside} of {n.elements} elements differ from eager past the {dtype} tolerance"
    if n.reference_error is None:
        return off if not n.passed else ""
    versus = (f"from the float32 forward, compiled is {_num(n.reference_error)} off on average and eager "
              f"{_num(n.eager_reference_error)}")
    if n.passed:
        return f"{off}, but {versus}: within what {dtype} rounding costs eager itself"
    return f"{off}; {versus}: compiled is further from it than eager"


def _model_note(m: ModelLevel) -> str:
    note = "; ".join(x for x in (m.error or m.advice or "", numerics_note(m.numerics)) if x)
    if m.analyzed_sites:
        note += ("; " if note else "") + (f"analyze found {len(m.analyzed_sites)} site(s); "
                 + (f"not replaced: {', '.join(m.unreplaced_sites)}" if m.unreplaced_sites else "all replaced"))
    if m.mismatch_type:
        note = f"[red]mismatch type {m.mismatch_type}[/]: {note}"
    return note.strip()


def _timings(console: Console, report: VerifyReport) -> None:
    for g in report.groups:
        for c in g.unit:
            if c.timing:
                t = c.timing
                console.print(f"timing {c.pattern}: eager {t.eager_ms:.3f} ms, compiled {t.compiled_ms:.3f} ms, "
                              f"speedup {t.speedup:.2f}×", highlight=False)
        if g.model is not None and g.model.timing:
            t = g.model.timing
            console.print(f"timing {g.model.model} with {g.group}: eager {t.eager_ms:.3f} ms, compiled "
                          f"{t.compiled_ms:.3f} ms, speedup {t.speedup:.2f}×", highlight=False)
    console.print(f"timing: {report.timing_note}", highlight=False)


def _add_group_rows(table: FitTable, g: GroupResult) -> None:
    """A row naming the group, then one row per pattern (a stacked block each, under the group's)."""
    where = ("" if g.position else " (not in pattern_registry)" if g.position is None
             else " (GraphPatternEntry carrier, registered ahead of pattern_registry; checked on the model)")
    head = f"[bold]{g.group}[/]{where}"
    if g.load_error:
        table.add_row(str(g.position or "-"), head, "", "", "", "", "", "", "[red]fail[/]", "")
        return
    table.add_row(str(g.position or "-"), head)
    for c in g.unit:
        fused, gone = _case_check(c)
        n = c.numerics
        gate = "[green]pass[/]" if c.passed else "[red]fail[/]"
        upstream = "n/a" if n is None else ("pass" if n.upstream_gate else "[red]fail[/]")
        table.add_row("", f"  {c.pattern}",
                      f"{c.own_hits}/{c.replacements} ({', '.join(map(str, c.pass_log_counts)) or '-'})", fused, gone,
                      _cos(n.cosine if n else None), _num(n.max_abs if n else None), _num(n.max_rel if n else None),
                      gate, upstream)


def markdown_report(report: VerifyReport) -> str:
    """The report kept in the workspace (verify.md), beside verify.json."""
    if report.skipped:
        return f"# sdcompile verify\n\n- device: **{report.device}**\n- {skipped_text(report)}\n"
    if report.graph_pass is not None:
        t = report.graph_pass
        return "\n".join([
            "# sdcompile verify", "", f"- device: **{report.device}** ({report.device_reason})",
            f"- target: MindIE-SD {report.target_version} at `{report.target}`", f"- versions: {versions_line(report)}",
            f"- custom graph pass: `{t.pass_class}` in `{t.pass_file}`",
            f"- its generated test: `{t.test_file}` — {t.last_line} (output: `{t.log}`)",
            f"- rerun: `{t.command}`", f"- verdict: **{'PASS' if t.passed else 'FAIL'}**", ""])
    lines = [
        "# sdcompile verify",
        "",
        f"- device: **{report.device}** ({report.device_reason})",
        f"- NPU kernels: {report.npu_kernels or 'not recorded'}",
        f"- target: MindIE-SD {report.target_version} at `{report.target}` — {report.target_package}",
        f"- versions: {versions_line(report)}",
        f"- gate: at least one replacement, fused op present, original ops gone, cosine ≥ {report.min_cosine:.6g} "
        f"(upstream's own tests only assert cosine > {report.upstream_min_cosine:g})",
        f"- timing: {report.timing_note}",
        f"- verdict: **{'PASS' if report.passed else 'FAIL'}**",
        "",
        "## Pattern modules",
        "",
        *(f"- {m.module}: {'ok' if m.ok else 'FAILED — ' + str(m.error)}" for m in report.pattern_modules),
        "",
        "## Groups",
        "",
        "| group | pattern | own/group hits | fused op present | originals gone | cosine | max abs | max rel | gate "
        "| upstream gate |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for g in report.groups:
        if g.load_error:
            lines.append(f"| {g.group} | — | — | — | — | — | — | — | fail (did not load) | — |")
            continue
        for c in g.unit:
            n, graph = c.numerics, c.graph
            upstream = "n/a" if n is None else ("pass" if n.upstream_gate else "fail")
            lines.append(
                f"| {g.group} | {c.pattern} | {c.own_hits}/{c.replacements} "
                f"| {_yes(graph.fused_present if graph else None)} | {_yes(graph.originals_gone if graph else None)} "
                f"| {_cos(n.cosine if n else None)} | {_num(n.max_abs if n else None)} "
                f"| {_num(n.max_rel if n else None)} | {'pass' if c.passed else 'fail'} | {upstream} |"
            )
    lines.append("")
    for g in report.groups:
        lines += [f"### {g.group}", "", g.summary, ""]
        for c in g.unit:
            if not c.passed:
                lines += _md_failing_case(c)
        if g.model is not None:
            lines += _md_model_level(g.model)
        lines.append("")
    for note in report.notes:
        lines.append(f"> {note}")
    return "\n".join(lines).rstrip() + "\n"


def _md_failing_case(c: UnitCase) -> list[str]:
    """A failing pattern: why, and where it and the graph part."""
    lines = [f"- **{c.pattern}**: " + " ".join(_why_lines(c)[:1] or ["no replacement"])]
    d = c.divergence
    if d is None:
        return lines
    if d.graph_node:
        lines.append(f"  - graph: `{d.graph_node}`")
    if d.pattern_node:
        lines.append(f"  - pattern: `{d.pattern_node}`")
    if d.start:
        lines.append(f"  - lined up: {d.matched} of {d.total} pattern ops from `{d.start}`")
    if d.torch_message:
        lines.append(f"  - torch's matcher: `{d.torch_message}`")
    if d.mismatch is not None:
        lines.append(f"  - fix: {d.mismatch.fix}")
        lines += [f"  - evidence: {e}" for e in _further_evidence(d)]
    return lines


def _md_model_level(m: ModelLevel) -> list[str]:
    lines = []
    if m.fused_ops_before_pass:
        lines.append("- fused ops already in the model graph before the pass: "
                     + ", ".join(f"`{k}`×{v}" for k, v in m.fused_ops_before_pass.items()))
    said = numerics_note(m.numerics)
    lines.append(f"- model {m.model} ({m.dtype}): {m.replacements} replacement(s) in {m.graphs} graph(s)"
                 + (f", cosine {_cos(m.numerics.cosine)}" if m.numerics else "")
                 + (f" ({said})" if said else "")
                 + (f"; mismatch type {m.mismatch_type}: {m.advice}" if m.mismatch_type else "")
                 + (f"; error: {m.error}" if m.error else ""))
    if m.analyzed_sites:
        lines.append(f"- phase-1 sites ({len(m.analyzed_sites)}): " + ", ".join(m.analyzed_sites)
                     + (f"; not replaced: {', '.join(m.unreplaced_sites)}" if m.unreplaced_sites else ""))
    for s in m.sites:
        lines.append(f"  - {s.pattern} at `{s.module_path or s.node}` (node {s.node}, {s.target})"
                     + (f" ← {s.source}" if s.source else ""))
    lines += [f"- on the NPU's kernels: {line.strip()}" if not line.startswith(" ") else f"  - {line.strip()}"
              for line in npu_kernels.lines(m.kernels)]
    return lines
