"""One primitive's report: each implementation located in the run, with its sites' subgraphs, tensor sources,
path decision, graph evidence, NPU note and the files written for it."""

from __future__ import annotations

from sdcompile.core.graph.stages import STAGE_AFTER_FREEZING, STAGE_BEFORE_FREEZING
from sdcompile.core.zoo.primitives import primitive_rules
from sdcompile.core.zoo.source import extract_source, line_ranges
from sdcompile.phases.analyze.artifacts import prune_snippets, write_snippets
from sdcompile.phases.analyze.graph_reads import child_tensors, evidence, no_nodes_note, site_subgraphs, tensor_sources
from sdcompile.phases.analyze.npu_note import npu_note, npu_sites
from sdcompile.phases.analyze.path_decision import decide
from sdcompile.phases.analyze.results import ImplementationReport, OpReport, SiteReport, Unexercised, Why
from sdcompile.phases.pair_scope import writing_pair
from sdcompile.util.reasons import Reason
from sdcompile.util.source_paths import short_path


def op_report(op, requested, located, trace, capture, built, device, ws, unexercised=()) -> OpReport:
    """The report of `op`; its pair folder (and files) exist when it was located or asked for by name.
    `unexercised`: core.zoo.unexercised's sites of `op`."""

    rules = primitive_rules()[op]
    pair = ws.pair_dir(built.name, op, create=False) if (located or requested) else None
    with writing_pair(pair):  # held since the start unless this pair's folder is new (analyze --op all)
        impls = tuple(_implementation(loc, trace, capture, built, device, ws, pair) for loc in located)
        if pair is not None:
            prune_snippets(pair / "snippets", impls)
    return OpReport(
        op=op,
        title=rules.title,
        requested=requested,
        present=bool(located),
        implementations=impls,
        site_count=sum(i.counted_sites for i in impls),
        analysis=ws.relative(pair / "analysis.json") if pair is not None else None,
        note=None if located else Reason.of(Why.ABSENT, title=rules.title, modulation=bool(rules.modulation)),
        unexercised=tuple(_unexercised(site) for site in unexercised),
    )


def _unexercised(site) -> Unexercised:
    guard = site.guard
    return Unexercised(
        op=site.op, file=short_path(site.file), line=site.line, lines=site.lines, code=site.code,
        function=site.function, matched_by=site.matched_by, not_run=site.not_run,
        guard=guard.test if guard else "", guard_kind=guard.kind.value if guard else "",
        guard_holds=guard.holds if guard else True, guard_ran=site.guard_ran,
        guard_file=short_path(site.guard_file), guard_line=guard.line if guard else 0,
        guard_function=site.guard_function if guard else "", argument=site.argument,
        parameter=site.parameter,
        argument_given=site.argument_given, argument_value=site.argument_value, setting=site.setting,
        setting_value=site.setting_value,
    )


def _site_reports(loc, capture, npu_taken: set[str] | None) -> tuple[list[SiteReport], list[tuple]]:
    """Per site its report and (site, before_freezing subgraphs, after_freezing subgraphs). `npu_taken` is None
    when the implementation has no NPU branch."""

    per_site: list[tuple[str, list, list]] = []
    sites = []
    for site in loc.sites:
        before = site_subgraphs(capture.stage(STAGE_BEFORE_FREEZING), loc, site.path)
        after = site_subgraphs(capture.stage(STAGE_AFTER_FREEZING), loc, site.path)
        per_site.append((site.path, before, after))
        sites.append(SiteReport(
            path=site.path,
            module_class=site.module_class,
            calls=site.calls,
            aten_nodes=sum(len(s.nodes) for s in before),
            shared_graph=any(s.shared for s in before),
            note=(Reason.of(Why.UNMODULATED) if not site.modulates
                  else None if before else no_nodes_note(capture, loc, site.path)),
            npu_branch_taken=(site.path in npu_taken) if npu_taken is not None else None,
        ))
    return sites, per_site


def _implementation(loc, trace, capture, built, device, ws, pair) -> ImplementationReport:
    extract = extract_source(loc, trace.lines)
    taken = npu_sites(loc, trace)
    npu = npu_note(loc, extract, taken, device)
    sites, per_site = _site_reports(loc, capture, taken if npu is not None else None)
    tensors = tensor_sources(loc, capture)
    snippet = subgraphs = None
    if pair is not None:
        snippet, subgraphs = write_snippets(loc, extract, per_site, capture, built.label, ws, pair)
    return ImplementationReport(
        name=loc.display_name,
        qualified_name=loc.qualified_name,
        kind=loc.kind,
        scope=loc.scope,
        matched_by=loc.matched_by,
        form=loc.form,
        order=loc.order,
        source=extract.location if extract else loc.file,
        lines_run=line_ranges(extract.lines_run) if extract else "",
        primitive_lines=line_ranges(loc.lines),
        site_count=loc.site_count,
        sites=tuple(sites),
        tensors=tensors,
        child_tensors=child_tensors(loc, trace),
        decision=decide(tensors, capture),
        evidence=evidence(tensors, per_site, capture),
        npu_note=npu,
        snippet=snippet,
        subgraphs=subgraphs,
        producer_only=loc.producer_only,
    )
