"""Rendering of `sdcompile scaffold`: the reuse check site by site, the path, what was generated and its check;
and the prose the result carries (reasons, notes, next steps), worded here from the typed decisions the phase
takes."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from sdcompile.phases.analyze.render import decision_why
from sdcompile.phases.choices import CARRIER_NAMES, Carrier, Decision
from sdcompile.phases.scaffold.results import Need, ScaffoldResult, Why
from sdcompile.rendering.closing import Verdict, close, print_commands
from sdcompile.rendering.data_moved import chain_vs_replacement
from sdcompile.rendering.layout import print_code
from sdcompile.rendering.tables import FitTable
from sdcompile.rendering.versions import versions_line
from sdcompile.util.reasons import Words, worded

DECISION_STYLE = {
    Decision.REUSE: "cyan",
    Decision.ALREADY_FUSED: "cyan",
    Decision.GENERATE: "green",
    Decision.NOTHING_LOCATED: "red",
    Decision.CANNOT_GENERATE: "red",
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
                  f"{escape(reason_text(r.decision_reason))}")
    console.print(f"  model     {escape(r.label)} · {'/'.join(r.dtypes)} · device {escape(r.device)}")
    console.print(f"  versions  {escape(versions_line(r))}")
    console.print(f"  target    MindIE-SD {escape(r.target_version)} at {escape(r.target)} "
                  f"({escape(r.target_package)})")
    entries = any(v.path == Carrier.GRAPH_ENTRY for v in r.variants)
    carrier = (f"{r.names.entries_function} (GraphPatternEntry carrier)" if entries else r.names.group)
    console.print(f"  names     {escape(carrier)} in patterns/{escape(r.names.pattern_filename)}, flag "
                  f"{escape(r.names.flag)}")
    ran = f" (analyze ran first: no analysis for {r.dtypes[0]} on {r.device})" if r.phase1_ran_first else ""
    console.print(f"  phase 1   {escape(r.phase1)}{escape(ran)}")


def _paths(console: Console, r: ScaffoldResult) -> None:
    if not r.paths:
        return
    paths = FitTable(title="path per implementation", title_justify="left")
    for col in ("implementation", "parameter source", "phase 1", "path", "why"):
        paths.add_column(col, overflow="fold")
    for p in r.paths:
        paths.add_row(escape(p.implementation), escape(p.parameter_source),
                      escape(CARRIER_NAMES.get(p.phase1_path, p.phase1_path)),
                      f"[bold]{p.path}[/]", escape(reason_text(p.why)))
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
        need = f"[bold]{escape(need_word(row.need))}[/]\n[dim]{escape(reason_text(row.reason))}[/]"
        sites.add_row(row.dtype, escape(row.site or "(model)"), escape(row.implementation), str(row.nodes),
                      _coverage(row.production.status, row.production.by, row.production.left),
                      alone or "[dim]none[/]", need,
                      escape(row.generated or ""), _check(row))
    console.print(sites)


def _variants(console: Console, r: ScaffoldResult) -> None:
    for v in r.variants:
        kind = {Carrier.REPLACEMENT: "register_replacement pattern",
                Carrier.GRAPH_ENTRY: "GraphPatternEntry chain"}.get(v.path, "custom graph-pass chain")
        console.print(f"[bold]{escape(v.name)}[/] ({kind}) from {escape(v.implementation)} — {len(v.sites)} site(s); "
                      f"entries: {escape(', '.join(v.entries))}")
        for line in [*map(input_line, v.inputs), *map(constant_line, v.constants)]:
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
            if n.chain_bytes is not None and n.replacement_bytes is not None:
                console.print(f"  data moved {n.dtype}: "
                              f"{chain_vs_replacement(n.chain_bytes, n.replacement_bytes, n.materialised_bytes)}",
                              highlight=False)
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
        console.print(f"[cyan]note:[/] {escape(reason_text(n))}")
    print_commands(console, r.next_steps)
    if r.workspace:
        console.print(f"[dim]recorded phase 2 in {escape(r.workspace)}[/]")
    close(console, verdict(r))


def verdict(r: ScaffoldResult) -> Verdict:
    """The closing line: INFO when the target's groups or the model already do it, PASS when what was generated
    passed its checks, FAIL otherwise."""
    word = "FAIL" if r.gate == "fail" else {Decision.REUSE: "INFO", Decision.ALREADY_FUSED: "INFO",
                                            Decision.GENERATE: "PASS"}.get(r.decision, "FAIL")
    wrote = [f.path for f in r.files if f.status in ("created", "overwritten")]
    done = (" (dry run: nothing written)" if r.dry_run else f"; wrote {len(wrote)} file(s)" if wrote
            else "; nothing written" if r.decision == Decision.GENERATE else "")
    return Verdict(word, f"scaffold {r.model} {r.op}: {r.decision}{done}")


def render_scaffold(console: Console, r: ScaffoldResult) -> None:
    for section in (_header, _paths, _sites, _variants, _files, _footer):
        section(console, r)


# ------------------------------------------------------------------------------ the reasons the result carries
def _listed(items) -> str:
    return ", ".join(str(i) for i in items)


# a site's need as the tables and docs/ word it: a carrier as the thing the site gets
NEED_WORDS = {Need.REPLACEMENT: "pattern", Need.GRAPH_ENTRY: "graph entry", Need.GRAPH_PASS: "graph pass"}


def need_word(need: str) -> str:
    return NEED_WORDS.get(need, need)


def _needs(counts) -> str:
    """{need: sites} as "6 covered, 2 pattern"."""
    return ", ".join(f"{n} {need_word(need)}" for need, n in counts.items())


def _phase1_words(requested: str, agreed: bool, phase1: dict) -> str:
    """PathChoice.why: phase 1's decision (its analysis.json entry), or --path and whether phase 1 agreed."""

    why, path = decision_why(phase1), CARRIER_NAMES[phase1["path"]]
    if requested == "auto":
        return f"phase 1: parameter source {phase1['parameter_source']} -> {path} in {phase1['stage']}. {why}"
    return f"--path {requested}" + ("" if agreed else f" (phase 1 chose {path}: {why})")


def _production_takes_part(groups, ops, then=None) -> str:
    """Why a graph pass cannot replace a chain the target's enabled groups take part of before it runs."""
    ops = sorted(dict.fromkeys(ops))
    names = ", ".join(g for g, _flag in groups)
    flags = [flag for _g, flag in groups if flag]
    off = f"set {', '.join(f'{f}=False' for f in flags)} in the compilation config" if flags else "disable it"
    text = (f"{names}, enabled by default, replaces {', '.join(ops)} of this chain in the pattern pass, before any "
            f"graph pass runs, so a pass would find that group's fused op instead of the chain: {off} for this "
            "model, or write the pass by hand over what it leaves (docs/custom-graph-pass.md)")
    return text + (f"; {reason_text(then)}" if then else "")


def _groups_leave(what: str, node: str = "", role: str = "") -> str:
    return {"output-read": "the enabled groups replaced the chain's output together with what reads it",
            "reads-outside": f"the enabled groups' replacement reads {node}, outside the chain",
            "role-replaced": f"the enabled groups replaced {node}, where {role} enters the fused op"}[what]


def _inner_op(inner, gained, entry_can: bool) -> str:
    way_out = ("a GraphPatternEntry matches the graph's own nodes (--path auto or graph-entry)" if entry_can
               else "a hand-written GraphPatternEntry matching the graph's own nodes can (docs/graph-pattern-entry.md)")
    return (f"{_listed(inner)} sits inside the chain and register_replacement registers it as "
            f"{_listed(gained) or 'something else'}, so no pattern over this chain can match on this torch; "
            f"{way_out}")


def _materialised(name, fused_op, reads, like, like_shape, roles) -> str:
    """What a replacement costs on the NPU when its fused op reads roles element for element with output_like."""
    spelled = ", ".join(f"{r} {list(shape)}" if shape is not None else f"{r} (absent: zeros)" for r, shape in roles)
    return (f"{name}: {fused_op}'s NPU kernel reads {' and '.join(reads)} element for element with {like} "
            f"{list(like_shape)}, so {spelled} become tensors of {like}'s size before each call (a copy or fill per "
            "role on the NPU, more memory traffic than the broadcast multiply-add it replaces); CPU captures do not "
            "show it, copy-audit on NPU profiles does")


def _numerics(name, path, dtypes, figures, error, transform_role, transform, ignored) -> str:
    """Why the numerics gate refused a variant (its first failing run), and the hand-written way out."""
    guide = {"graph-entry": "docs/graph-pattern-entry.md", "graph-pass": "docs/custom-graph-pass.md"}.get(
        path, "docs/pattern-templates.md")
    dtypes = ", ".join(dtypes)
    if error is not None:
        return f"numerics gate ({dtypes}): {name}'s replacement raised: {error} — write it by hand ({guide})"
    f = figures
    head = (f"numerics gate ({dtypes}): {name}'s replacement differs from its search function (cosine "
            f"{f['cosine']:.6f}, max |diff| {f['max_abs']:.3g}, {f['outside']} of {f['elements']} elements outside "
            f"{f['dtype'].removeprefix('torch.')}'s tolerance)")
    if transform_role is not None:
        return (f"{head}: the chain computes {' -> '.join(transform)} from {transform_role} before the fused op's "
                f"point, and a {'pattern' if path == 'replacement' else 'fused call'} binding that value is not "
                f"generated here — write it by hand ({guide})")
    if ignored:
        sides = "; ".join(f"the {'replacement' if side == 'replacement' else 'search function'} does not read {i}"
                          for i, side in ignored)
        return f"{head}: {sides} — the recipe's roles do not fit this chain; write it by hand ({guide})"
    return (f"{head}: no single input transform explains it, so the fused op does not compute this chain "
            f"— write it by hand ({guide})")


def _no_table_form(title: str, computed_inputs: bool) -> str:
    why = ("the fused op's inputs are computed from the chain's, not held by it" if computed_inputs
           else "its fused call has a mode the handler cannot choose")
    return (f"the {title} recipe generates register_replacement patterns only ({why}): use --path "
            "replacement, or write the entry by hand (docs/graph-pattern-entry.md)")


def _withheld(missed) -> str:
    return (f"nothing was written: the generated source does not replace {len(missed)} of the sites it came from "
            f"({', '.join(missed[:4])}{' ...' if len(missed) > 4 else ''})")


WORDS: Words = {
    Why.NOTHING_LOCATED: lambda title: f"no {title} ran in this model's forward (phase 1 found none)",
    Why.ALREADY_FUSED: lambda counts: f"every site already calls the fused op itself ({_needs(counts)})",
    Why.REUSE: lambda counts: (f"the target's groups already replace every site ({_needs(counts)}); nothing "
                               "created (--force generates a pattern anyway)"),
    Why.NOTHING_GENERATABLE: lambda counts, why: (f"no site can be generated ({_needs(counts)}"
                                                  + (f": {reason_text(why)})" if why else ")")),
    Why.NONE_WRITABLE: lambda needy, why: (f"none of the {needy} site(s) needing a replacement can be written as "
                                           f"one: {reason_text(why) if why else 'the reasons differ by site'}"),
    Why.GENERATE: lambda generated, forced, counts: (f"{generated} site(s) get a generated replacement"
                                                     f"{' (--force)' if forced else ''} ({_needs(counts)})"),
    Why.COVERED: lambda: "see production",
    Why.PRODUCER_ONLY: lambda: ("only produces shift/scale/gate from the conditioning; the modulation runs where its "
                                "caller applies them, and that is the site"),
    Why.UNMODULATED: lambda: ("no modulation ran here: this call multiplies the norm's output by a value that is not "
                              "1 + scale (a gate, as Mochi's tanh-gated residual norms), which neither AdaLN fused op "
                              "computes"),
    Why.FUSED_BY_MODEL: lambda fused_ops: (f"the model graph already calls {_listed(fused_ops)} here (diffusers' own "
                                           "NPU branch): nothing to replace"),
    Why.OTHER_MATH: lambda op, key, has, wants, title: (f"{op} has {key}={has!r}, and the fused {title} computes "
                                                        f"{key}={wants!r} only: this site keeps its own math"),
    Why.NOT_IN_GRAPH: lambda: ("the code ran, but no node of the captured graphs is this site's: a graph break may "
                               "have compiled it in a graph of its own, outside the model's modules, or nothing it "
                               "computed reached the graph"),
    Why.SPLIT_BY_BREAK: lambda graphs: (f"split across {graphs} captured graphs by a graph break: a pattern never "
                                        "matches across a break"),
    Why.NEEDS_GENERATION: lambda status, forced: "--force" if forced else f"{status} by the enabled groups",
    Why.COVERED_BY_GENERATED: lambda by, own: (f"replaced by {_listed(by)}, generated from the other sites: the same "
                                               "chain runs here, though this site's own nodes could not be written as "
                                               f"one ({reason_text(own)})"),
    Why.NO_RECIPE: lambda op: (f"no replacement recipe for {op} in catalogs/ops/{op}.toml: the fused call and how the "
                               "chain's inputs map onto it are not known"),
    Why.NO_NODES_AFTER_FREEZE: lambda: "the site has no nodes in the graph its carrier meets",
    Why.NO_TABLE_FORM: _no_table_form,
    Why.INNER_OP: _inner_op,
    Why.SHARED_START: lambda start: (f"its {start} result is read by another chain too (one normalised value "
                                     "modulated twice), and a register_replacement pattern may not leave an inner "
                                     "value behind (mismatch type 5); a GraphPatternEntry (--path auto or graph-entry) "
                                     "replaces each chain with its own fused call, which computes the norm again"),
    Why.CHAIN: lambda message: message,
    Why.PRODUCTION_TAKES_PART: _production_takes_part,
    Why.GROUPS_LEAVE: _groups_leave,
    Why.NUMERICS: _numerics,
    Why.PATH_UNREPORTED: lambda chosen: "phase 1 did not report this implementation; " + (
        f"--path {chosen}" if chosen != Carrier.REPLACEMENT else "register_replacement by default"),
    Why.PATH_PHASE1: _phase1_words,
    # the refusal's first clause: the rest says what to do instead, which is what auto does
    Why.AUTO_ENTRY: lambda refusal: ("auto: GraphPatternEntry, because no register_replacement pattern can serve "
                                     f"this chain on this torch ({reason_text(refusal).split(';')[0]})"),
    Why.ONE_CARRIER: lambda: ("auto: GraphPatternEntry, because other sites of this fusion need one (one fusion, one "
                              "carrier and one flag; an entry serves any chain a pattern serves)"),
    Why.REGISTRATION_FINDING: lambda torch, lost, gained: (
        f"register_replacement on torch {torch} registers {_listed(lost)} as {_listed(gained) or 'nothing'} (it "
        "traces search functions with inductor's decomposition table), while the graph MindieSDBackend matches keeps "
        "it: a pattern containing it never matches"),
    Why.MATERIALISED: _materialised,
    Why.BACKEND_ALREADY_CALLS: lambda backend, pass_class: (f"{backend} already calls {pass_class}: no backend edit "
                                                            "needed"),
    Why.BESIDE_TARGET_OWN: lambda group, flag, word, files: (
        f"the names --model and --op give ({group}, {flag}) are the target's own code, which scaffold does not write "
        f"over: the generated files take the names --name {word} gives ({_listed(files)}); pass --name to choose "
        "another word"),
    Why.COVERING_LEAVES: lambda ops: (
        f"the covering group(s) leave {_listed(ops)} at each site around the fused op (kernels that stay on the NPU); "
        "a register_replacement pattern cannot absorb what registration rewrites, a GraphPatternEntry can: --path "
        "graph-entry --force"),
    Why.FUSED_BY_DIFFUSERS: lambda sites, op, device: (
        f"{sites} {op} site(s) already call the fused op because diffusers sees torch_npu ({device}); that is what "
        "an NPU host runs, so they need no pattern. --plain-cpu shows the chain a process without torch_npu traces."),
    Why.PLAIN_CPU: lambda: ("--plain-cpu: the graphs are those of a process without torch_npu (diffusers takes no "
                            "NPU branch); on an NPU host diffusers' own NPU branches may replace these chains before "
                            "any pattern sees them"),
    Why.WITHHELD: _withheld,
}


def reason_text(reason) -> str:
    """One of scaffold's reasons (a Reason, or its JSON) in words."""
    return worded(reason, WORDS)


def constant_line(c) -> str:
    """A VariantConstant: as the graph holds it and as the source spells it."""
    return f"{c.name}: the graph holds {c.graph_value!r}" + (
        f" = float32({c.spelled})" if c.fp32_rounded else " (the Python float, unrounded)")


def input_line(i) -> str:
    """A VariantInput: its role, shape, dtype and where its value comes from."""
    return f"{i.role} {list(i.shape)} {i.dtype} <- {i.origin}"


def record_summary(r: ScaffoldResult) -> str:
    summary = f"{r.decision}: {reason_text(r.decision_reason)}"
    if r.written:
        summary += "; wrote " + ", ".join(f.path for f in r.files if f.status in ("created", "overwritten"))
    return summary
