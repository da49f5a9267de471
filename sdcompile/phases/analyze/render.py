"""Rendering of `sdcompile analyze`: one table per primitive, then where each implementation's tensors come
from, with graph evidence; and the prose the result carries (the path's why, notes, the NPU note), worded here
from the typed decisions the phase takes."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from sdcompile.phases.analyze.results import (
    PATTERN_STAGE,
    AnalyzeResult,
    Holder,
    ImplementationReport,
    OpReport,
    TensorSource,
    Unexercised,
)
from sdcompile.rendering.tables import FitTable
from sdcompile.rendering.versions import versions_line

_PATH_STYLE = {"register_replacement": "green", "GraphPatternEntry": "yellow"}


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
        return f"{d.parameter_source}\n{first.tensor.rsplit('.', 1)[-1]}{extra}: {first.before_freezing} -> " \
               f"{first.after_freezing.split(' (')[0]}"
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
        table.add_row(
            f"[bold]{impl.name}[/]{form}{order}",
            f"{impl.kind}\n{impl.scope}",
            _sites(impl),
            _source(impl),
            _params(impl),
            f"[{style}]{impl.decision.path}[/]\n{impl.decision.stage}" if style else impl.decision.path,
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
            console.print(f"\n[bold]{report.title}[/]: {marker} — {report.note}", highlight=False)
            _print_unexercised(console, report, result.model_class)
            continue
        console.print()
        console.print(_op_table(report))
        for impl in report.implementations:
            console.print(f"[bold]{impl.name}[/]: {impl.decision.why}", highlight=False)
            for line in impl.evidence[:3]:
                console.print(f"  evidence: {line}", highlight=False)
            if impl.npu_note is not None:
                console.print(f"  NPU: {impl.npu_note.text}", highlight=False)
            if impl.snippet:
                console.print(f"  source: {impl.snippet}   subgraphs: {impl.subgraphs}", highlight=False)
        _print_unexercised(console, report, result.model_class)
    console.print(f"\nGraphs: {result.capture.note}", highlight=False)
    if result.capture.redundant_node_elimination:
        console.print("Before the pattern pass: redundant-node elimination by "
                      f"{result.capture.redundant_node_elimination}", highlight=False)
    dumps = f" (graph dumps in {result.capture.folder})" if result.capture.folder else ""
    console.print(f"Workspace: {result.workspace}{dumps}", highlight=False)
    console.print(verdict_line(result), highlight=False, soft_wrap=True)


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


def verdict_line(result: AnalyzeResult) -> str:
    """The closing verdict, in the words verify and run close with (PASS/FAIL: ...)."""
    if result.gate == "fail":
        unrun = [r.title for r in result.ops if r.op in result.missing and r.unexercised]
        tail = f"; {', '.join(unrun)} present in the source but not run by these inputs: see above" if unrun else ""
        return f"[red]FAIL[/]: requested but absent from {escape(result.label)}: {', '.join(result.missing)}{tail}"
    found = [f"{r.title} {r.site_count} site(s)" for r in result.ops if r.site_count]
    if not found:
        return f"[green]PASS[/]: nothing was requested by name; {escape(result.label)} runs none of the primitives"
    if any(r.requested for r in result.ops):
        return f"[green]PASS[/]: every requested primitive located: {', '.join(found)}"
    return (f"[green]PASS[/]: {len(found)} of {len(result.ops)} primitive(s) run in {escape(result.label)}: "
            f"{', '.join(found)}")


# ------------------------------------------------------------------------------ the prose the result carries
UNMODULATED_NOTE = ("no modulation ran here: this call multiplies by a value that is not 1 + scale (a gate), so it is "
                    "not an AdaLN site")


def absent_note(title: str, modulation: bool) -> str:
    """OpReport.note of a primitive that did not run."""
    return (f"no {title} ran in this model's forward: nothing matched the catalog's classes, functions, "
            f"op signatures{' or modulation forms' if modulation else ''} (catalogs/primitives.toml)")


def not_captured_note(backend: str) -> str:
    """SiteReport.note when torch.compile failed."""
    return f"not captured: {backend}"


DEAD_CODE_NOTE = ("dead code: in the dynamo graph but not in the AOT graph — its result never reaches an output, "
                  "so no pattern will ever see it")
OUTSIDE_COMPILED_NOTE = "not in any captured graph: it ran outside compiled code"


def holder_text(holder: Holder, name: str = "", target: object = "") -> str:
    """How a stage holds a module tensor, for people (TensorSource.before_freezing / after_freezing)."""
    if holder is Holder.PLACEHOLDER:
        return f"placeholder {name}"
    if holder is Holder.GET_ATTR:
        return f"get_attr {target} ({name})"
    if holder is Holder.FOLDED:
        return "folded by freeze() into a constant derived from it (get_attr _frozen_param*)"
    if holder is Holder.NOT_CAPTURED:
        return "not captured"
    return "not in the graph"


RULE_FUNCTION_INPUT = "function input -> register_replacement (the pattern's inputs bind to graph values)"
RULE_MODULE_ATTRIBUTE = ("nn.Module attribute -> register_replacement with the weight as a pattern input where the "
                         "pattern pass sees it as a placeholder, else a GraphPatternEntry (custom graph passes are "
                         "forbidden upstream)")
WHY_FUNCTION_INPUT = ("every tensor it uses arrives as an argument or an activation computed in the graph, so a "
                      "register_replacement pattern whose inputs are those tensors matches in the pattern pass")


def why_lifted(first: TensorSource, torch_version: str) -> str:
    """Why a module tensor that is a graph input before freezing takes register_replacement."""
    after = first.after_freezing
    why = (
        f"MindIE-SD's pattern pass runs in {PATTERN_STAGE} on the AOT graph, where {first.tensor} is "
        f"{first.before_freezing} (dynamo lifts module tensors into graph inputs on torch {torch_version}), "
        "so a register_replacement pattern taking it as an input matches there. "
    )
    if first.after_holder is Holder.FOLDED:
        why += (f"After freeze() it is {after}: part of the chain became a constant, which is why the chain is "
                "matched in the pattern pass, before freezing (mismatch type 6 is what matching after it meets).")
    elif first.after_holder is Holder.GET_ATTR:
        # torch's matcher binds a pattern input to any node, get_attr included (checked by debug's tests);
        # only folding inside the chain defeats it after freezing.
        why += (f"After freeze() it is {after}; torch's matcher binds a pattern input to a get_attr node "
                "too, so even a pass placed after freezing would match it unless freeze() folds part of the "
                "chain (mismatch type 6; `sdcompile debug --stage after-freezing` checks this model).")
    else:
        why += f"After freeze() it is still {after} in this capture."
    return why


def why_not_captured(backend: str) -> str:
    return (f"no graph was captured ({backend}), so how the pattern pass holds the weight cannot be checked; the "
            "recipe's rule applies: the weight is a register_replacement pattern input, matched before freezing")


def why_constant(holder: TensorSource) -> str:
    return (f"{holder.tensor} is already {holder.before_freezing} in the graph the pattern pass sees, not the "
            "placeholder the maintainers' rule (weights as pattern inputs, matched before freezing) relies on, on "
            "this torch: a GraphPatternEntry written from that graph takes it as it is")


def why_unbound(first: TensorSource) -> str:
    return (f"{first.tensor} does not appear as a graph input or constant ({first.before_freezing}); the pattern's "
            "inputs bind to the values computed from it")


def inputs_evidence(site: str, inputs) -> str:
    """One evidence line of an implementation without module tensors: its subgraph's inputs at a site."""
    shown = "; ".join(f"{name}: {what}" for name, what in inputs[:4])
    return (f"before_freezing, site {site or '(model)'}: the subgraph's inputs are {shown}"
            + (" ..." if len(inputs) > 4 else ""))


def npu_note_text(fused: tuple[str, ...], condition: str, gate_meaning: str, device_label: str,
                  model_sees_npu: bool, taken: int, total: int, skipped: list[str]) -> str:
    """NpuNote.text: what diffusers' own torch_npu branch means here, and where this run took it."""
    ops = ", ".join(f"torch_npu.{f}" for f in fused)
    text = (f"diffusers itself calls {ops} here when torch_npu is installed"
            + (f" (`{condition}`)" if condition else "")
            + f"; where that branch runs, an NPU host needs no pattern. {gate_meaning}. ")
    if not model_sees_npu:
        return text + f"This run ({device_label}) traced without torch_npu, so the branch did not run."
    text += f"This run ({device_label}) took the branch at {taken} of {total} sites"
    if skipped:
        text += (f"; not at {', '.join(skipped[:4])}{' ...' if len(skipped) > 4 else ''} (the rest of its "
                 "condition is false there), so those sites still need a pattern")
    return text + "."


NOT_COMPILED_NOTE = "not compiled: none of the requested primitives ran"


def no_graphs_note(backend: str) -> str:
    return f"no graphs: {backend}"


def parameters_text(placeholders: int, get_attrs: int) -> str:
    return f"{placeholders} placeholders, {get_attrs} get_attr"


def capture_note(prepare_freezing: bool, before: tuple[int, int], after: tuple[int, int], folded: int,
                 torch_version: str) -> str:
    """CaptureSummary.note: how the pattern pass and freeze() see parameters in this capture."""
    (b_ph, b_ga), (a_ph, a_ga) = before, after
    if not prepare_freezing:
        return f"Captured without prepare_freezing: after freeze() parameters are {a_ph} placeholders and {a_ga} " \
               "get_attr."
    folded_text = (f", and {folded} constants freeze() folded from parameters (e.g. transposed linear weights)"
                   if folded else "")
    return (
        f"The pattern pass (graph_rewrite_before_freezing) sees parameters as placeholders ({b_ph} placeholders, "
        f"{b_ga} get_attr); after freeze() there are {a_ga} parameter get_attr _frozen_param* nodes"
        f"{folded_text}. Captured with dynamo's "
        "prepare_freezing on, as inductor does for freezing: with a bare torch.compile(model, "
        f"backend=MindieSDBackend()) on torch {torch_version}, dynamo lifts parameters into graph inputs, "
        "freeze() receives no params and they stay placeholders after freezing too."
    )


def record_summary(report: OpReport) -> str:
    """The line phase 1 records for a model/op pair."""
    if not report.present:
        return f"{report.title} is absent from this model"
    names = "; ".join(f"{i.name} ({site_phrase(i)})" for i in report.implementations)
    return f"{len(report.implementations)} implementation(s), {report.site_count} site(s): {names}"
