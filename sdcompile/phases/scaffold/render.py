"""Rendering of `sdcompile scaffold`: the reuse check site by site, the path, what was generated and its check;
and the prose the result carries (reasons, notes, next steps), worded here from the typed decisions the phase
takes."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from sdcompile.phases.scaffold.results import Need, ScaffoldResult
from sdcompile.rendering.closing import print_commands, print_verdict
from sdcompile.rendering.layout import print_code
from sdcompile.rendering.tables import FitTable
from sdcompile.rendering.versions import versions_line

DECISION_STYLE = {
    "reuse": "cyan",
    "already fused": "cyan",
    "generate": "green",
    "nothing located": "red",
    "cannot generate": "red",
}
STATUS_STYLE = {
    "replaced": "green",
    "partly replaced": "yellow",
    "not replaced": "dim",
    "fused by the model": "cyan",
    "not in the graph": "red",
}


def _coverage(status: str, by: tuple[str, ...], left: tuple[str, ...]) -> str:
    text = f"[{STATUS_STYLE.get(status, 'white')}]{status}[/]"
    if by:
        text += "\n" + "\n".join(escape(b) for b in by)
    if left and status != "not replaced":
        text += f"\n[dim]left: {escape(', '.join(left))}[/]"
    return text


def _check(row) -> str:
    if row.check is None:
        return ""
    c = row.check
    if c.hit:
        return "[green]hit[/]"
    text = "[red]miss[/]"
    if c.by:
        text += f" (by {escape(', '.join(c.by))})"
    if c.error:
        text += f"\n{escape(c.error)}"
    return text


def _header(console: Console, r: ScaffoldResult) -> None:
    style = DECISION_STYLE.get(r.decision, "white")
    mode = " [yellow](dry run: nothing written)[/]" if r.dry_run else ""
    console.print(f"[bold]scaffold[/] {escape(r.model)} {escape(r.op)}: [{style}]{r.decision}[/]{mode} — "
                  f"{escape(r.decision_reason)}")
    console.print(f"  model     {escape(r.label)} · {'/'.join(r.dtypes)} · device {escape(r.device)}")
    console.print(f"  versions  {escape(versions_line(r))}")
    console.print(f"  target    MindIE-SD {escape(r.target_version)} at {escape(r.target)} "
                  f"({escape(r.target_package)})")
    entries = any(v.path == "graph-entry" for v in r.variants)
    carrier = (f"{r.names.entries_function} (GraphPatternEntry carrier)" if entries else r.names.group)
    console.print(f"  names     {escape(carrier)} in patterns/{escape(r.names.pattern_filename)}, flag "
                  f"{escape(r.names.flag)}")
    console.print(f"  phase 1   {escape(r.phase1)}")


def _paths(console: Console, r: ScaffoldResult) -> None:
    if not r.paths:
        return
    paths = FitTable(title="path per implementation", title_justify="left")
    for col in ("implementation", "parameter source", "phase 1", "path", "why"):
        paths.add_column(col, overflow="fold")
    for p in r.paths:
        paths.add_row(escape(p.implementation), escape(p.parameter_source), escape(p.phase1_path),
                      f"[bold]{p.path}[/]", escape(p.why))
    console.print(paths)


def _sites(console: Console, r: ScaffoldResult) -> None:
    sites = FitTable(title=f"reuse check: the target's groups on {r.model}'s graph, site by site "
                           f"(production = the {len(r.production_groups)} groups enabled by default, in registry "
                           "order)", head=2, collapse=("site", "sites"))
    for col in ("dtype", "site", "implementation", "nodes", "production", "groups alone", "needs", "generated",
                "check"):
        sites.add_column(col, overflow="fold")
    for row in r.sites:
        alone = "\n".join(f"{escape(g.group)}: {g.status} ({g.replaced}/{row.nodes})" for g in row.groups)
        need = f"[bold]{escape(row.need)}[/]\n[dim]{escape(row.reason)}[/]"
        sites.add_row(row.dtype, escape(row.site or "(model)"), escape(row.implementation), str(row.nodes),
                      _coverage(row.production.status, row.production.by, row.production.left),
                      alone or "[dim]none[/]", need,
                      escape(row.generated or ""), _check(row))
    console.print(sites)


def _variants(console: Console, r: ScaffoldResult) -> None:
    for v in r.variants:
        kind = {"replacement": "register_replacement pattern", "graph-entry": "GraphPatternEntry chain"}.get(
            v.path, "custom graph-pass chain")
        console.print(f"[bold]{escape(v.name)}[/] ({kind}) from {escape(v.implementation)} — {len(v.sites)} site(s); "
                      f"entries: {escape(', '.join(v.entries))}")
        for line in v.inputs + v.constants:
            console.print(f"  {escape(line)}")
        if v.after_groups:
            console.print(f"  [yellow]as {escape(', '.join(v.after_groups))} leave(s) it:[/] the pattern pass runs "
                          "before this pass and replaces part of the chain, so the pass also holds it in that form")
        if v.trimmed:
            console.print(f"  [yellow]left outside the pattern:[/] {escape('; '.join(v.trimmed))}")
        for role, var in v.bound:
            console.print(f"  [yellow]{escape(role)} bound as {escape(var)}:[/] the chain transforms it before the "
                          "fused op's point, so the replacement recomputes that value and passes it")
        for n in (n for n in r.numerics if n.variant == v.name):
            console.print(f"  numerics {n.dtype}: {_numerics_line(n)}")
        print_code(console, "\n".join(v.chain) + f"\n# replacement: {v.replacement}", "python")


def _numerics_line(n) -> str:
    """One NumericsCheck: the replacement against its search function."""
    if n.error is not None:
        return f"[red]fail[/] (the replacement raised: {escape(n.error)})"
    verdict = "[green]pass[/]" if n.passed else "[red]fail[/]"
    return (f"{verdict} against the search function (cosine {n.cosine:.6f}, max |diff| {n.max_abs:.3g}, "
            f"{n.outside}/{n.elements} outside tolerance)")


def _files(console: Console, r: ScaffoldResult) -> None:
    if r.files:
        files = FitTable(title="files", title_justify="left")
        for col in ("file", "kind", "status", "lines"):
            files.add_column(col)
        for f in r.files:
            files.add_row(escape(f.path), f.kind, f.status, str(f.lines))
        console.print(files)
        diffs = "".join(f.diff for f in r.files) if r.dry_run else ""
        if diffs:
            print_code(console, diffs, "diff")
    if r.backend_diff:
        console.print("[bold]backend edit[/] (not applied: apply it yourself, e.g. `git apply` of the saved "
                      "scaffold/backend.diff):")
        print_code(console, r.backend_diff, "diff")


def _footer(console: Console, r: ScaffoldResult) -> None:
    for e in r.errors:
        console.print(f"[yellow]warning:[/] {escape(e)}")
    for n in r.notes:
        console.print(f"[cyan]note:[/] {escape(n)}")
    print_commands(console, r.next_steps)
    if r.workspace:
        console.print(f"[dim]recorded phase 2 in {escape(r.workspace)}[/]")
    print_verdict(console, *verdict(r))


def verdict(r: ScaffoldResult) -> tuple[str, str]:
    """The closing line: INFO when the target's groups or the model already do it, PASS when what was generated
    passed its checks, FAIL otherwise."""
    word = "FAIL" if r.gate == "fail" else {"reuse": "INFO", "already fused": "INFO", "generate": "PASS"}.get(
        r.decision, "FAIL")
    wrote = [f.path for f in r.files if f.status in ("created", "overwritten")]
    done = (" (dry run: nothing written)" if r.dry_run else f"; wrote {len(wrote)} file(s)" if wrote
            else "; nothing written" if r.decision == "generate" else "")
    return word, f"scaffold {escape(r.model)} {escape(r.op)}: {escape(r.decision)}{done}"


def render_scaffold(console: Console, r: ScaffoldResult) -> None:
    for section in (_header, _paths, _sites, _variants, _files, _footer):
        section(console, r)


# ------------------------------------------------------------------------------ the prose the result carries
def phase1_ran_first(analysis: str, dtype: str, device: str) -> str:
    """ScaffoldResult.phase1 when analyze ran first."""
    return f"{analysis} (analyze ran first: no analysis for {dtype} on {device})"


def path_why_unreported(chosen: str) -> str:
    return "phase 1 did not report this implementation; " + (
        f"--path {chosen}" if chosen != "replacement" else "register_replacement by default")


def path_why(requested: str, as_phase1: bool, decision: dict) -> str:
    """PathChoice.why: phase 1's decision (its analysis.json entry), or --path and whether phase 1 agreed."""
    phase1 = decision["path"]
    if requested == "auto":
        return (f"phase 1: parameter source {decision['parameter_source']} -> {phase1} in {decision['stage']}. "
                f"{decision['why']}")
    return f"--path {requested}" + ("" if as_phase1 else f" (phase 1 chose {phase1}: {decision['why']})")


def production_takes_part(groups, ops) -> str:
    """Why a graph pass cannot replace a chain the target's enabled groups take part of before it runs. `groups`:
    (group, its compilation-config flag or None)."""
    ops = sorted(dict.fromkeys(ops))
    names = ", ".join(g for g, _flag in groups)
    flags = [flag for _g, flag in groups if flag]
    off = f"set {', '.join(f'{f}=False' for f in flags)} in the compilation config" if flags else "disable it"
    return (f"{names}, enabled by default, replaces {', '.join(ops)} of this chain in the pattern pass, before any "
            f"graph pass runs, so a pass would find that group's fused op instead of the chain: {off} for this "
            "model, or write the pass by hand over what it leaves (docs/custom-graph-pass.md)")


def auto_entry_why(pattern_refusal: str) -> str:
    """PathChoice.why when --path auto takes a GraphPatternEntry because no pattern can hold the chain here."""
    return (f"auto: GraphPatternEntry, because no register_replacement pattern can serve this chain on this torch "
            f"({pattern_refusal.split(';')[0]})")


ONE_CARRIER_WHY = ("auto: GraphPatternEntry, because other sites of this fusion need one (one fusion, one carrier "
                   "and one flag; an entry serves any chain a pattern serves)")


def fused_by_model_reason(fused_ops) -> str:
    return (f"the model graph already calls {', '.join(fused_ops)} here (diffusers' own NPU branch): nothing to "
            "replace")


COVERED_REASON = "see production"
PRODUCER_ONLY_REASON = ("only produces shift/scale/gate from the conditioning; the modulation runs where its caller "
                        "applies them, and that is the site")
UNMODULATED_REASON = ("no modulation ran here: this call multiplies the norm's output by a value that is not 1 + scale "
                      "(a gate, as Mochi's tanh-gated residual norms), which neither AdaLN fused op computes")
NO_NODES_AFTER_FREEZE = "the site has no nodes in the graph its carrier meets"


def needs_generation_reason(status: str, forced: bool) -> str:
    return "--force" if forced else f"{status} by the enabled groups"


def no_recipe_reason(op: str) -> str:
    return (f"no replacement recipe for {op} in catalogs/scaffold.toml: the fused call and how the chain's inputs "
            "map onto it are not known")


def registration_finding(torch_version: str, lost, gained) -> str:
    """A note: register_replacement registers ops of the chain differently from how the graph holds them."""
    return (f"register_replacement on torch {torch_version} registers {', '.join(lost)} as "
            f"{', '.join(gained) or 'nothing'} (it traces search functions with inductor's decomposition table), "
            "while the graph MindieSDBackend matches keeps it: a pattern containing it never matches")


def inner_op_refusal(inner, gained, graph_pass_can: bool = True) -> str:
    """Why a site cannot get a pattern: an op registration rewrites sits inside its chain."""
    way_out = ("a GraphPatternEntry matches the graph's own nodes (--path auto or graph-entry)" if graph_pass_can
               else "a hand-written GraphPatternEntry matching the graph's own nodes can (docs/graph-pattern-entry.md)")
    return (f"{', '.join(inner)} sits inside the chain and register_replacement registers it as "
            f"{', '.join(gained) or 'something else'}, so no pattern over this chain can match on this torch; "
            f"{way_out}")


def shared_start_refusal(start: str) -> str:
    """Why a chain whose start (its LayerNorm) other chains also read gets no pattern, and the way that serves it."""
    return (f"its {start} result is read by another chain too (one normalised value modulated twice), and a "
            "register_replacement pattern may not leave an inner value behind (mismatch type 5); a GraphPatternEntry "
            "(--path auto or graph-entry) replaces each chain with its own fused call, which computes the norm again")


def materialised(name: str, recipe, chain, roles) -> str:
    """What a replacement costs on the NPU when its fused op reads roles element for element with output_like."""
    by_role = {i.role: i for i in chain.inputs}
    like = by_role[recipe.output_like]
    spelled = ", ".join(f"{r} {list(by_role[r].shape)}" if r in by_role else f"{r} (absent: zeros)" for r in roles)
    return (f"{name}: {recipe.fused_op}'s NPU kernel reads {' and '.join(recipe.flat_roles)} element for element "
            f"with {recipe.output_like} {list(like.shape)}, so {spelled} become tensors of {recipe.output_like}'s "
            "size before each call (a copy or fill per role on the NPU, more memory traffic than the broadcast "
            "multiply-add it replaces); CPU captures do not show it, copy-audit on NPU profiles does")


def backend_already_calls(backend: str, pass_class: str) -> str:
    return f"{backend} already calls {pass_class}: no backend edit needed"


def beside_target_own(held, word: str, files) -> str:
    return (f"the names --model and --op give ({held.group}, {held.flag}) are the target's own code, which scaffold "
            f"does not write over: the generated files take the names --name {word} gives ({', '.join(files)}); "
            "pass --name to choose another word")


def _needs(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {n}" for n, k in counts.items())


def nothing_located_reason(op: str) -> str:
    return f"no {op} ran in this model's forward (phase 1 found none)"


def already_fused_reason(counts: dict[str, int]) -> str:
    return f"every site already calls the fused op itself ({_needs(counts)})"


def reuse_reason(counts: dict[str, int]) -> str:
    return (f"the target's groups already replace every site ({_needs(counts)}); nothing created "
            "(--force generates a pattern anyway)")


def nothing_generatable_reason(counts: dict[str, int], why: str | None) -> str:
    """`why`: the one reason the sites nothing serves share, None when they differ."""
    return f"no site can be generated ({_needs(counts)}" + (f": {why})" if why else ")")


def none_writable_reason(needy: int, why: str | None) -> str:
    """`why`: the one reason all sites share, None when they differ."""
    return (f"none of the {needy} site(s) needing a replacement can be written as one: "
            f"{why if why is not None else 'the reasons are per site'}")


def generate_reason(generated: int, forced: bool, counts: dict[str, int]) -> str:
    return f"{generated} site(s) get a generated replacement{' (--force)' if forced else ''} ({_needs(counts)})"


def covered_by_generated_reason(by, own: str) -> str:
    """A site whose own nodes could not be written (`own`: why) but which the pass generated elsewhere replaces."""
    return (f"replaced by {', '.join(by)}, generated from the other sites: the same chain runs here, though this "
            f"site's own nodes could not be written as one ({own})")


def withheld_text(missed: list[str]) -> str:
    return (f"nothing was written: the generated source does not replace {len(missed)} of the sites it came from "
            f"({', '.join(missed[:4])}{' ...' if len(missed) > 4 else ''})")


def constant_line(c) -> str:
    """Variant.constants: a chain constant, as the graph holds it and as the source spells it."""
    return f"{c.name}: the graph holds {c.graph_value!r}" + (
        f" = float32({c.spelled})" if c.fp32_rounded else " (the Python float, unrounded)")


def input_line(i) -> str:
    return f"{i.role} {list(i.shape)} {i.dtype} <- {i.origin}"


def record_summary(r: ScaffoldResult) -> str:
    summary = f"{r.decision}: {r.decision_reason}"
    if r.written:
        summary += "; wrote " + ", ".join(f.path for f in r.files if f.status in ("created", "overwritten"))
    return summary


def device_notes(device, op: str, rows) -> tuple[str, ...]:
    """Notes on what the covering groups leave, diffusers' own NPU branch, and --plain-cpu."""
    notes = []
    left = sorted({op_left for r in rows if r.need == Need.COVERED for op_left in r.production.left})
    if left:
        notes.append(f"the covering group(s) leave {', '.join(left)} at each site around the fused op (kernels that "
                     "stay on the NPU); a register_replacement pattern cannot absorb what registration rewrites, a "
                     "GraphPatternEntry can: --path graph-entry --force")
    fused = [r for r in rows if r.need == Need.FUSED]
    if fused and device.model_sees_npu:
        notes.append(f"{len(fused)} {op} site(s) already call the fused op because diffusers sees torch_npu "
                     f"({device.label}); that is what an NPU host runs, so they need no pattern. --plain-cpu shows "
                     "the chain a process without torch_npu traces.")
    if device.mode == "plain-cpu":
        notes.append("--plain-cpu: the graphs are those of a process without torch_npu (diffusers takes no NPU "
                     "branch); on an NPU host diffusers' own NPU branches may replace these chains before any "
                     "pattern sees them")
    return tuple(notes)


def _numerics_figures(run) -> str:
    n = run.numerics
    return (f"cosine {n.cosine:.6f}, max |diff| {n.max_abs:.3g}, {n.outside} of {n.elements} elements outside "
            f"{n.dtype.removeprefix('torch.')}'s tolerance")


def numerics_refusal(name: str, path: str, runs) -> str:
    """Why the numerics gate refused a variant (its failing runs), and the hand-written way out."""
    run = runs[0]
    guide = {"graph-entry": "docs/graph-pattern-entry.md", "graph-pass": "docs/custom-graph-pass.md"}.get(
        path, "docs/pattern-templates.md")
    dtypes = ", ".join(dict.fromkeys(r.dtype for r in runs))
    if run.error is not None:
        return f"numerics gate ({dtypes}): {name}'s replacement raised: {run.error} — write it by hand ({guide})"
    head = f"numerics gate ({dtypes}): {name}'s replacement differs from its search function ({_numerics_figures(run)})"
    if run.transform is not None:
        t = run.transform
        return (f"{head}: the chain computes {' -> '.join(t.steps)} from {t.role} before the fused op's point, and a "
                f"{'pattern' if path == 'replacement' else 'fused call'} binding that value is not generated here "
                f"— write it by hand ({guide})")
    if run.ignored:
        sides = "; ".join(f"the {'replacement' if side == 'replacement' else 'search function'} does not read {i}"
                          for i, side in run.ignored)
        return f"{head}: {sides} — the recipe's roles do not fit this chain; write it by hand ({guide})"
    return (f"{head}: no single input transform explains it, so the fused op does not compute this chain "
            f"— write it by hand ({guide})")


def no_graph_pass_form(recipe) -> str:
    why = ("the fused op's inputs are computed from the chain's, not held by it" if not recipe.graph_pass
           else "its fused call has a mode the handler cannot choose")
    return (f"the {recipe.title} recipe generates register_replacement patterns only ({why}): use --path "
            "replacement, or write the entry by hand (docs/graph-pattern-entry.md)")
