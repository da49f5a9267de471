"""Phase 5, `sdcompile debug`: the graph the pattern pass really sees, aligned node by node with each pattern as
the matcher registered it, at every candidate site; the first mismatch, its catalog type (1-7) and the fix.

1. Graph breaks first (read off the capture below): a pattern never matches across one.
2. The model compiled the way MindieSDBackend does (graph.capture, with the target's own redundant-node
   elimination pass), kept at every stage and dumped as `<stage>.<model>.txt` with source-line comments.
3. Each selected group registered through the target's own PatternMatchPass; each pattern's search graph
   traced again exactly as register_replacement traced it (graph.pattern_graph), printed readably.
4. The group's pass applied to a copy of the stage graph (before_freezing: what the backend's pass does;
   after_freezing: what the same patterns would replace if a pass ran there) and to the group's own search
   functions compiled the same way (the unit test): replacement counts, and where each replacement landed.
5. Candidate sites (graph.candidates: phase-1 sites and op anchors); at each, every pattern aligned from
   the output (graph.align), torch's own matcher asked for its verdict, the first difference classified
   (graph.mismatch). Writes debug.json and metadata.json beside the dumps and records phase 5.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from sdcompile.core.environment import environment_fields
from sdcompile.core.graph.candidates import candidate_sites, op_anchors, whole_graph_site
from sdcompile.core.graph.capture import capture_graphs
from sdcompile.core.graph.mismatch import source_line
from sdcompile.core.graph.nodes import op_name
from sdcompile.core.graph.stages import STAGE_AFTER_FREEZING, STAGE_BEFORE_FREEZING
from sdcompile.core.npu.device import activate_for_command
from sdcompile.core.ops import OPS
from sdcompile.core.target.discovery import find_target
from sdcompile.core.target.loader import load_target
from sdcompile.core.zoo.model_step import ModelRequest, first_forward
from sdcompile.phases.choices import DEBUG_STAGES
from sdcompile.phases.debug.groups import group_op, run_group, run_in_registry_order, select_groups
from sdcompile.phases.debug.output import write_dumps, write_result
from sdcompile.phases.debug.results import (
    DebugResult,
    FirstMismatch,
    GraphBreaks,
    GroupAtSite,
    GroupInfo,
    MismatchVerdict,
    NodeView,
    PairView,
    PatternAtSite,
    PatternInfo,
    RegistryRun,
    SiteResult,
)
from sdcompile.phases.debug.subjects import RNE_NAME, Subject, locate_sites, unit_capture
from sdcompile.phases.pair_scope import holds_pair
from sdcompile.util.choices import check_choice
from sdcompile.util.errors import BadInput
from sdcompile.workspace.store import Workspace, safe_name

Progress = Callable[[str], None]
STAGE_CHOICES = DEBUG_STAGES


# ------------------------------------------------------------------------------------------------ the phase
@holds_pair()
def run_debug(
    model: str | None = None,
    model_file: str | None = None,
    op: str | None = None,
    groups: tuple[str, ...] = (),
    pattern_file: Path | str | None = None,
    stage: str = "before-freezing",
    dtype: str = "bf16",
    plain_cpu: bool = False,
    repo: Path | str | None = None,
    workdir: Path | str | None = None,
    progress: Progress | None = None,
    registry_order: bool = False,
    timeout: float | None = None,
    build=None,
) -> DebugResult:
    """Everything `sdcompile debug` does; see the module docstring. `registry_order` also runs every group the
    backend enables by default, in registration order, to find ordering conflicts (type 5). `timeout`: seconds the
    model's build and each forward may take (None: $SDCOMPILE_TIMEOUT, else 600; 0: no limit)."""

    started = time.perf_counter()
    _check_options(model, model_file, op, groups, pattern_file, stage)
    say = progress or (lambda _text: None)

    device = activate_for_command(plain_cpu)  # before anything imports diffusers

    stage_name = STAGE_BEFORE_FREEZING if stage == "before-freezing" else STAGE_AFTER_FREEZING
    tree = find_target(repo)
    say(f"loading {tree.root} under {device.label}")
    target = load_target(tree)
    selected = select_groups(target, op, tuple(groups), Path(pattern_file) if pattern_file else None)
    has_model = bool(model or model_file or (build is not None and (build.capture or build.config)))
    op = op or _op_of(selected, has_model)
    anchors = op_anchors(op) if has_model else None
    title = anchors.title if anchors else op
    rne = target.redundant_node_pass()

    # -- the model (or, with no model, each group's own search functions)
    subjects: list[Subject] = []
    built, breaks, located, notes = None, None, (), []
    if has_model:
        built, breaks, subject, located, note = _model_subject(model, model_file, op, dtype, device, rne, stage_name,
                                                               say, timeout, build)
        subjects.append(subject)
        notes += [note] if note else []
    unit_subjects = _unit_subjects(target, selected, rne, device, stage_name, say)

    if built is not None:
        subjects[0].sites = candidate_sites(subjects[0].stages, anchors, located)
    else:
        for s in unit_subjects.values():
            s.sites = [whole_graph_site(st, f"the search function of {s.unit_of}") for st in s.stages]
            subjects.append(s)

    # -- per group: register, trace patterns, apply the pass, align at every site
    ws = Workspace(workdir)
    report_dir = _report_dir(ws, built, op, selected)
    group_infos, per_site = [], {}  # (subject, site index) -> list[GroupAtSite]
    after_pass_texts: dict[str, str] = {}
    for group in selected:
        say(f"{group.name}: registering and matching")
        info = run_group(target, group, subjects, unit_subjects, built is not None, stage_name, per_site,
                         after_pass_texts)
        group_infos.append(info)
    registry = None
    if registry_order and built is not None:
        say("every default-enabled group, in registration order")
        registry = run_in_registry_order(target, selected, subjects[0], per_site, stage_name)

    sites = _site_results(subjects, per_site, anchors)
    mismatched = sum(1 for s in sites if s.verdict == "mismatch")
    passed = bool(sites) and mismatched == 0
    stage_note = _stage_note(stage_name, subjects)
    dumps = write_dumps(report_dir, subjects, built, group_infos, selected, after_pass_texts, stage_name)
    result = DebugResult(
        **environment_fields(device, tree, target),
        model=built.name if built else "unit",
        label=built.label if built else "each group against its own search functions",
        dtype=built.dtype_name if built else "as each pattern's inputs()",
        op=op,
        stage=stage_name,
        stage_note=stage_note,
        prepare_freezing=bool(subjects and subjects[0].capture.metadata.prepare_freezing),
        graph_breaks=breaks,
        groups=tuple(group_infos),
        registry_run=registry,
        sites=tuple(sites),
        mismatched_sites=mismatched,
        passed=passed,
        summary=_verdict_line(sites, mismatched, title, subjects),
        notes=tuple(notes),
        report_dir=str(report_dir),
        dumps=tuple(str(p) for p in dumps),
        seconds=round(time.perf_counter() - started, 3),
    )
    write_result(ws, result, report_dir, built, op)
    return result


def _check_options(model, model_file, op, groups, pattern_file, stage: str) -> None:
    """Refuse what cannot be debugged before anything heavy is imported."""

    check_choice(stage, STAGE_CHOICES, "stage")
    if op is not None:
        check_choice(op, OPS, "op")
    if model and model_file:
        raise BadInput("both --model and --model-file were given", "pass one of them")
    if not op and not groups and not pattern_file:
        raise BadInput("nothing to debug", "pass --op (every group of that op), --group NAME or --pattern-file F")


def _op_of(selected: list, has_model: bool) -> str:
    """The op the selected groups replace, when --op was not given (a model needs exactly one)."""

    ops = sorted({o for o in (group_op(g) for g in selected) if o})
    if has_model and len(ops) != 1:
        names = ", ".join(g.name for g in selected)
        raise BadInput(f"cannot tell which op {names} replace (found: {', '.join(ops) or 'none'})",
                       f"pass --op ({', '.join(OPS)})")
    return "+".join(ops) or "unknown"


def _model_subject(model, model_file, op: str, dtype: str, device, rne, stage_name: str, say: Progress,
                   timeout: float | None = None, build=None):
    """The model built, its graph breaks, and it compiled as MindieSDBackend does: (built, breaks, subject, the
    phase-1 sites located in it, a note when they could not be)."""

    request = ModelRequest(model, model_file, build, dtype, timeout)
    say(f"building {request.spec.name} ({dtype}) and running one forward")
    built, _output = first_forward(request)
    say("compiling as MindieSDBackend does (dynamo, AOT, redundant-node elimination, freeze)")
    capture = capture_graphs(built.module, built.inputs, model=built.name, dtype=built.dtype_name,
                             device=device.label, redundant_node_elimination=rne,
                             redundant_node_elimination_name=RNE_NAME)
    breaks = GraphBreaks(capture.metadata.graph_count, capture.breaks, capture.untraced)
    with built.forward_deadline():
        located, note = locate_sites(built, op)
    return built, breaks, Subject(built.name, capture, capture.stage(stage_name)), located, note


def _unit_subjects(target, selected: list, rne, device, stage_name: str, say: Progress) -> dict[str, Subject]:
    """Each selected pattern's own search function compiled the same way (a group's error when one does not)."""
    unit_subjects: dict[str, Subject] = {}
    for group in selected:
        for cls in group.classes:
            say(f"unit: {cls.name()}")
            try:
                cap = unit_capture(target, cls, rne, device)
            except Exception as exc:  # noqa: BLE001 - a search function that does not compile is reported
                from sdcompile.core.target.failures import describe_error

                group.error = group.error or f"{cls.name()}: the search function does not compile: " \
                                             f"{describe_error(exc, target.tree.root)}"
                continue
            unit_subjects[cls.name()] = Subject(f"unit {cls.name()}", cap, cap.stage(stage_name), unit_of=cls.name())
    return unit_subjects


def _report_dir(ws, built, op: str, selected: list) -> Path:
    if built is not None:
        return ws.pair_dir(built.name, op) / "debug"
    return ws.root / "_debug" / safe_name("+".join(g.name for g in selected))


def _verdict_line(sites: list[SiteResult], mismatched: int, title: str, subjects: list[Subject]) -> str:
    if not sites:
        return f"no {title} site found in {subjects[0].name if subjects else 'the graph'}"
    if mismatched == 0:
        return f"every {title} site matches ({len(sites)} site(s))"
    types = Counter(g.mismatch_type for s in sites if s.verdict == "mismatch" for g in s.groups
                    if g.mismatch_type is not None)
    kinds = ", ".join(f"type {t} ×{n}" for t, n in sorted(types.items()))
    return f"{mismatched} of {len(sites)} {title} site(s) match no group" + (f" ({kinds})" if kinds else "")


def _site_results(subjects: list[Subject], per_site: dict, anchors) -> list[SiteResult]:
    """Every candidate site with its groups' verdicts: matched when one group replaces it, already fused when
    the model calls the fused op there itself, else a mismatch."""

    sites = []
    for si, subject in enumerate(subjects):
        for ci, site in enumerate(subject.sites):
            results = tuple(per_site.get((si, ci), ()))
            verdicts = {r.verdict for r in results}
            verdict = ("already fused" if "already fused" in verdicts else
                       "matches" if "matches" in verdicts else "mismatch")
            shown = [n for n in site.nodes if anchors and op_name(n) in anchors.anchors] or site.nodes
            sites.append(SiteResult(
                id=f"S{len(sites) + 1}", subject=subject.name, label=site.label, graph=site.graph_index,
                found_by=tuple(site.found_by), nodes=len(site.nodes), source=source_line(shown[0]) if shown else "",
                fused_ops=tuple(sorted({op_name(n) for n in site.fused})), verdict=verdict, groups=results,
            ))
    return sites


def _stage_note(stage_name: str, subjects) -> str:
    placeholders = get_attrs = 0
    for subject in subjects[:1]:
        for st in subject.stages:
            for name, origin in st.origins.items():
                if origin.kind in ("parameter", "buffer", "tensor attribute"):
                    if st.node(name).op == "placeholder":
                        placeholders += 1
                    else:
                        get_attrs += 1
    tensors = (f"module tensors here: {placeholders} placeholder(s), {get_attrs} get_attr" if subjects else "")
    if stage_name == STAGE_AFTER_FREEZING:
        return ("after_freezing: the graph after freeze() (captured with dynamo's prepare_freezing, so parameters "
                "are frozen into get_attr constants as freezing is meant to do). MindieSDBackend runs no pattern "
                "pass here: replacement counts say what the selected patterns would replace if a pass ran at "
                f"graph_rewrite_after_freezing (where custom graph passes ran; the maintainers forbid them now, so "
                f"a carrier matches before freezing). {tensors}")
    return ("before_freezing: the AOT graph after the target's redundant-node elimination, as the pattern pass in "
            "graph_rewrite_before_freezing receives it; replacement counts are what that pass does. " + tensors)


__all__ = [
    "DebugResult", "FirstMismatch", "GraphBreaks", "GroupAtSite", "GroupInfo", "MismatchVerdict", "NodeView",
    "PairView", "PatternAtSite", "PatternInfo", "RegistryRun", "STAGE_CHOICES", "SiteResult", "run_debug",
    "select_groups",
]
