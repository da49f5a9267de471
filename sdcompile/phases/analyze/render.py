"""Rendering of `sdcompile analyze`: one table per primitive, then where each implementation's tensors come
from, with graph evidence; and the prose the result carries (the path's why, notes, the NPU note), worded here
from the typed decisions the phase takes."""

from __future__ import annotations

from collections.abc import Mapping

from rich.console import Console
from rich.markup import escape

from sdcompile.phases.analyze.results import (
    PATTERN_STAGE,
    AnalyzeResult,
    Held,
    Holder,
    ImplementationReport,
    NpuNote,
    OpReport,
    PathDecision,
    Unexercised,
    Why,
)
from sdcompile.phases.choices import CARRIER_NAMES, Carrier
from sdcompile.rendering.closing import Verdict, close
from sdcompile.rendering.graph_breaks import breaks_headline, graph_break_lines
from sdcompile.rendering.tables import FitTable
from sdcompile.rendering.versions import versions_line
from sdcompile.util.reasons import Words, worded

_PATH_STYLE = {Carrier.REPLACEMENT: "green", Carrier.GRAPH_ENTRY: "yellow"}


def _sites(impl: ImplementationReport, limit: int = 3) -> str:
    shown = [s.path or "(model)" for s in impl.sites[:limit]]
    more = f"\n+{impl.site_count - limit} more" if impl.site_count > limit else ""
    if impl.producer_only:
        return "none: " + PRODUCER + "\nat " + "\n".join(shown) + more
    return f"{impl.site_count}: " + "\n".join(shown) + more


PRODUCER = "produces the shift/scale/gate its callers modulate with (they are the sites)"


def site_phrase(impl: ImplementationReport) -> str:
    """`3 sites` / `1 site` / `not a site: produces ...` for one-line summaries."""
    if impl.producer_only:
        return f"not a site: {PRODUCER}"
    return f"{impl.site_count} site{'s' if impl.site_count != 1 else ''}"


def _params(impl: ImplementationReport) -> str:
    d = impl.decision
    if impl.tensors:
        first = impl.tensors[0]
        extra = f" (+{len(impl.tensors) - 1})" if len(impl.tensors) > 1 else ""
        after = "" if first.after.holder is Holder.NOT_FROZEN else f" -> {held_text(first.after).split(' (')[0]}"
        return f"{d.parameter_source}\n{first.tensor.rsplit('.', 1)[-1]}{extra}: {held_text(first.before)}{after}"
    text = d.parameter_source
    if impl.child_tensors:
        text += f"\n(module attributes only in children: {len(impl.child_tensors)})"
    return text


def _source(impl: ImplementationReport) -> str:
    if impl.primitive_lines:
        return f"{impl.source}\n(the {impl.kind} code: lines {impl.primitive_lines})"
    return f"{impl.source}\n(ran: {impl.lines_run})" if impl.lines_run else impl.source


def _npu(impl: ImplementationReport) -> str:
    note = impl.npu_note
    if note is None:
        return ""
    return f"{', '.join(note.fused_ops)}\ntaken at {note.taken_at}/{note.of_sites} sites"


def _op_table(report: OpReport) -> FitTable:
    title = f"{report.title} — {len(report.implementations)} implementation(s), {report.site_count} site(s)"
    table = FitTable(title=title, title_justify="left", show_lines=True)
    for col in ("implementation", "kind / scope", "sites", "source (lines run)", "parameter source", "path",
                "NPU note"):
        table.add_column(col, overflow="fold")
    for impl in report.implementations:
        form = f"\n{impl.form}" if impl.form else ""
        order = f"\norder: {impl.order}" if impl.order else ""
        style = _PATH_STYLE.get(impl.decision.path, "")
        path = CARRIER_NAMES.get(impl.decision.path, impl.decision.path)
        table.add_row(
            f"[bold]{impl.name}[/]{form}{order}",
            f"{impl.kind}\n{impl.scope}",
            _sites(impl),
            _source(impl),
            _params(impl),
            f"[{style}]{path}[/]\n{impl.decision.stage}" if style else path,
            _npu(impl),
        )
    return table


def render_analyze(console: Console, result: AnalyzeResult) -> None:
    console.print(
        f"[bold]{result.label}[/] — {result.model_class}\n"
        f"dtype {result.dtype} · device {result.device} · {result.capture.graphs} graph(s) captured in "
        f"{result.seconds:.1f}s\n{versions_line(result.versions, target=False)}",
        highlight=False,
    )
    for note in result.model_notes:
        console.print(f"model: {note}", highlight=False)
    for report in result.ops:
        if not report.present:
            marker = "[red]absent[/]" if report.requested else "absent"
            console.print(f"\n[bold]{report.title}[/]: {marker} — {reason_text(report.note)}", highlight=False)
            _print_unexercised(console, report, result.model_class)
            continue
        console.print()
        console.print(_op_table(report))
        for impl in report.implementations:
            console.print(f"[bold]{impl.name}[/]: {decision_why(impl.decision)}", highlight=False)
            for line in impl.evidence[:3]:
                console.print(f"  evidence: {line}", highlight=False)
            if impl.npu_note is not None:
                console.print(f"  NPU: {npu_note_text(impl.npu_note)}", highlight=False)
            if impl.snippet:
                console.print(f"  source: {impl.snippet}   subgraphs: {impl.subgraphs}", highlight=False)
        _print_unexercised(console, report, result.model_class)
    console.print(f"\nGraphs: {reason_text(result.capture.note)}", highlight=False)
    if result.capture.graphs > 1 or result.capture.untraced:
        console.print(f"Graph breaks: {breaks_headline(result.capture.graphs, bool(result.capture.untraced))}",
                      highlight=False)
        for line in graph_break_lines(result.capture.breaks, result.capture.untraced):
            console.print(f"  {escape(line)}", highlight=False)
    if result.capture.redundant_node_elimination:
        console.print("Before the pattern pass: redundant-node elimination by "
                      f"{result.capture.redundant_node_elimination}", highlight=False)
    dumps = f" (graph dumps in {result.capture.folder})" if result.capture.folder else ""
    console.print(f"Workspace: {result.workspace}{dumps}", highlight=False)
    close(console, verdict(result))


def _print_unexercised(console: Console, report: OpReport, model_class: str) -> None:
    if not report.unexercised:
        return
    count = len(report.unexercised)
    console.print(f"[yellow]warning[/]: {report.title} in the source that this forward did not run "
                  f"({count} place{'s' if count != 1 else ''}):", highlight=False)
    for item in report.unexercised:
        console.print(f"  {escape(unexercised_text(item, model_class))}", highlight=False)


def _condition(item: Unexercised) -> str:
    """`when ...` for the guard of an unexercised call."""
    where = f"line {item.guard_line}" if item.guard_file == item.file else f"{item.guard_file}:{item.guard_line}"
    if item.guard_kind == "for":
        text = f"when `{item.guard}` has items"
    elif item.guard_kind == "except":
        text = f"when the code it guards raises `{item.guard}`"
    elif item.guard_kind == "early exit":
        text = f"when `{item.guard}` is {'true' if item.guard_holds else 'false'} (an earlier branch returns)"
    else:
        text = f"when `{item.guard}`" + ("" if item.guard_holds else " is false")
    return f"{text} ({where}{'' if item.guard_ran else ', a line this forward did not reach either'})"


def unexercised_text(item: Unexercised, model_class: str) -> str:
    """One warning line: where the primitive call is, that it did not run, and what would reach it."""
    more = [n for n in item.lines if n != item.line]
    also = f" (and line{'s' if len(more) > 1 else ''} {', '.join(map(str, more))})" if more else ""
    text = f"{item.file}:{item.line} `{item.code}`{also} in {item.function} did not run"
    if item.not_run:
        text += f": {item.not_run} never ran in this forward" + ("; it is called " + _condition(item)
                                                                  if item.guard else "")
    elif item.guard:
        text += f": it runs {_condition(item)}"
    else:
        text += ": no condition around it was found in its function"
    model = model_class.rsplit(".", 1)[-1]
    if item.argument is not None:
        if item.argument_given:
            value, fix = f"set to {item.argument_value}", "give it another value"
        else:
            default = f" (default {item.argument_value})" if item.argument_value is not None else ""
            value, fix = f"leave out{default}", "pass it"
        text += (f" — `{item.argument}` is also a forward argument of {model}, which these inputs {value}: {fix} "
                 "(--inputs, or a factory with --model-file)")
    elif item.parameter is not None:
        text += (f" — `{item.parameter}` is a parameter of {item.guard_function}, and {model}'s forward has no "
                 "argument of that name")
    if item.setting is not None:
        text += f" — `{item.setting}` is {item.setting_value} here"
    return text


def verdict(result: AnalyzeResult) -> Verdict:
    """The closing verdict, in the words verify and run close with (PASS/FAIL: ...)."""
    if result.gate == "fail":
        unrun = [r.title for r in result.ops if r.op in result.missing and r.unexercised]
        tail = f"; {', '.join(unrun)} present in the source but not run by these inputs: see above" if unrun else ""
        return Verdict("FAIL", f"requested but absent from {result.label}: {', '.join(result.missing)}{tail}")
    found = [f"{r.title} {r.site_count} site(s)" for r in result.ops if r.site_count]
    if not found:
        return Verdict("PASS", f"nothing was requested by name; {result.label} runs none of the primitives")
    if any(r.requested for r in result.ops):
        return Verdict("PASS", f"every requested primitive located: {', '.join(found)}")
    return Verdict("PASS", f"{len(found)} of {len(result.ops)} primitive(s) run in {result.label}: "
                           f"{', '.join(found)}")


# ------------------------------------------------------------------------------ the reasons the result carries
def held_text(held: Held | Mapping) -> str:
    """How a stage holds a module tensor (a Held, or one as a reason's fact holds it)."""
    h = held if isinstance(held, Held) else Held(Holder(held["holder"]), held.get("node", ""), held.get("target", ""))
    if h.holder is Holder.PLACEHOLDER:
        return f"placeholder {h.node}"
    if h.holder is Holder.GET_ATTR:
        return f"get_attr {h.target} ({h.node})"
    if h.holder is Holder.FOLDED:
        return "folded by freeze() into a constant derived from it (get_attr _frozen_param*)"
    if h.holder is Holder.NOT_CAPTURED:
        return "not captured"
    if h.holder is Holder.NOT_FROZEN:
        return "not frozen (analyze --after-freezing runs freeze())"
    return "not in the graph"


def _lifted(tensor: str, before, after, torch: str) -> str:
    """Why a module tensor that is a graph input before freezing takes register_replacement."""
    after_held = Holder(after["holder"])
    why = (f"MindIE-SD's pattern pass runs in {PATTERN_STAGE} on the AOT graph, where {tensor} is "
           f"{held_text(before)} (dynamo lifts module tensors into graph inputs on torch {torch}), so a "
           "register_replacement pattern taking it as an input matches there. ")
    if after_held is Holder.NOT_FROZEN:
        return why + "What freeze() makes of it is shown with --after-freezing."
    if after_held is Holder.FOLDED:
        return why + (f"After freeze() it is {held_text(after)}: part of the chain became a constant, which is why "
                      "the chain is matched in the pattern pass, before freezing (mismatch type 6 is what matching "
                      "after it meets).")
    if after_held is Holder.GET_ATTR:
        # torch's matcher binds a pattern input to any node, get_attr included (checked by debug's tests);
        # only folding inside the chain defeats it after freezing.
        return why + (f"After freeze() it is {held_text(after)}; torch's matcher binds a pattern input to a get_attr "
                      "node too, so even a pass placed after freezing would match it unless freeze() folds part of "
                      "the chain (mismatch type 6; `sdcompile debug --stage after-freezing` checks this model).")
    return why + f"After freeze() it is still {held_text(after)} in this capture."


def _captured(prepare_freezing: bool, before, after, folded: int, torch: str) -> str:
    """CaptureSummary.note: how the pattern pass and freeze() see parameters in this capture."""
    b_ph, b_ga = before
    if after is None:
        return (f"The pattern pass (graph_rewrite_before_freezing) sees parameters as placeholders ({b_ph} "
                f"placeholders, {b_ga} get_attr). The capture stops there, where every carrier the maintainers accept "
                "matches; --after-freezing also runs freeze() and shows how it holds them.")
    a_ph, a_ga = after
    if not prepare_freezing:
        return f"Captured without prepare_freezing: after freeze() parameters are {a_ph} placeholders and {a_ga} " \
               "get_attr."
    folded_text = (f", and {folded} constants freeze() folded from parameters (e.g. transposed linear weights)"
                   if folded else "")
    return (f"The pattern pass (graph_rewrite_before_freezing) sees parameters as placeholders ({b_ph} placeholders, "
            f"{b_ga} get_attr); after freeze() there are {a_ga} parameter get_attr _frozen_param* nodes"
            f"{folded_text}. Captured with dynamo's prepare_freezing on, as inductor does for freezing: with a bare "
            f"torch.compile(model, backend=MindieSDBackend()) on torch {torch}, dynamo lifts parameters into graph "
            "inputs, freeze() receives no params and they stay placeholders after freezing too.")


WORDS: Words = {
    Why.UNMODULATED: lambda: ("no modulation ran here: this call multiplies by a value that is not 1 + scale (a "
                              "gate), so it is not an AdaLN site"),
    Why.NOT_CAPTURED: lambda backend: f"not captured: {backend}",
    Why.DEAD_CODE: lambda: ("dead code: in the dynamo graph but not in the AOT graph — its result never reaches an "
                            "output, so no pattern will ever see it"),
    Why.OUTSIDE_COMPILED: lambda: "not in any captured graph: it ran outside compiled code",
    Why.ABSENT: lambda title, modulation: (f"no {title} ran in this model's forward: nothing matched the catalog's "
                                           "classes, functions, op signatures"
                                           f"{' or modulation forms' if modulation else ''} "
                                           f"([primitive] in catalogs/ops/{title.lower()}.toml)"),
    Why.FUNCTION_INPUT: lambda: ("every tensor it uses arrives as an argument or an activation computed in the graph, "
                                 "so a register_replacement pattern whose inputs are those tensors matches in the "
                                 "pattern pass"),
    Why.LIFTED: _lifted,
    Why.CAPTURE_FAILED: lambda backend: (f"no graph was captured ({backend}), so how the pattern pass holds the weight "
                                         "cannot be checked; the recipe's rule applies: the weight is a "
                                         "register_replacement pattern input, matched before freezing"),
    Why.CONSTANT: lambda tensor, before: (f"{tensor} is already {held_text(before)} in the graph the pattern pass "
                                          "sees, not the placeholder the maintainers' rule (weights as pattern inputs, "
                                          "matched before freezing) relies on, on this torch: a GraphPatternEntry "
                                          "written from that graph takes it as it is"),
    Why.UNBOUND: lambda tensor, before: (f"{tensor} does not appear as a graph input or constant "
                                         f"({held_text(before)}); the pattern's inputs bind to the values computed "
                                         "from it"),
    Why.NOT_COMPILED: lambda: "not compiled: none of the requested primitives ran",
    Why.NO_GRAPHS: lambda backend: f"no graphs: {backend}",
    Why.CAPTURED: _captured,
}


def reason_text(reason) -> str:
    """One of analyze's reasons (a Reason, or its JSON) in words."""
    return worded(reason, WORDS)


def decision_why(decision: PathDecision | Mapping) -> str:
    """A path decision's why in words: a PathDecision, or one as analysis.json holds it (scaffold reads that)."""
    return reason_text(decision.why if isinstance(decision, PathDecision) else decision["why"])


def npu_note_text(note: NpuNote) -> str:
    """What diffusers' own torch_npu branch means here, and where this run took it."""
    ops = ", ".join(f"torch_npu.{f}" for f in note.fused_ops)
    text = (f"diffusers itself calls {ops} here when torch_npu is installed"
            + (f" (`{note.condition}`)" if note.condition else "")
            + f"; where that branch runs, an NPU host needs no pattern. {note.gate_meaning}. ")
    if not note.model_sees_npu:
        return text + f"This run ({note.device}) traced without torch_npu, so the branch did not run."
    text += f"This run ({note.device}) took the branch at {note.taken_at} of {note.of_sites} sites"
    skipped = note.not_taken
    if skipped:
        text += (f"; not at {', '.join(skipped[:4])}{' ...' if len(skipped) > 4 else ''} (the rest of its "
                 "condition is false there), so those sites still need a pattern")
    return text + "."


def record_summary(report: OpReport) -> str:
    """The line phase 1 records for a model/op pair."""
    if not report.present:
        return f"{report.title} is absent from this model"
    names = "; ".join(f"{i.name} ({site_phrase(i)})" for i in report.implementations)
    return f"{len(report.implementations)} implementation(s), {report.site_count} site(s): {names}"
