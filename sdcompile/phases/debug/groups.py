"""The pattern groups debug examines: which they are (an op's groups, named groups, a pattern file), each one
registered through the target's own pass and applied to the captured graphs, and all of them at once in the
backend's registration order."""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from sdcompile.core.graph.candidates import op_of_fused
from sdcompile.core.graph.mismatch import mismatch_type
from sdcompile.core.graph.nodes import target_name
from sdcompile.core.graph.pattern_graph import call_for, record_registrations, trace_registered
from sdcompile.core.graph.stages import STAGE_BEFORE_FREEZING
from sdcompile.core.target.failures import describe_error
from sdcompile.core.target.group_runner import GroupRunner
from sdcompile.core.target.kernel_sites import check_graph
from sdcompile.core.target.loader import emulated_fused_op_targets
from sdcompile.core.target.package_import import PACKAGE
from sdcompile.core.target.pattern_exprs import pattern_anchor_targets
from sdcompile.phases.debug.results import GroupAtSite, GroupInfo, MismatchVerdict, PatternInfo, RegistryRun
from sdcompile.phases.debug.sites import group_at_site
from sdcompile.phases.debug.subjects import Subject
from sdcompile.util.errors import BadInput


# ------------------------------------------------------------------------------------------------ groups
@dataclass
class PatternGroup:
    name: str
    flag: str | None
    position: int | None
    source: str
    classes: list  # PatternBase classes
    registered: bool  # a group of the target (else classes from --pattern-file)
    error: str | None = None


def _replacement_fused_ops(pattern_cls) -> set[str]:
    from torch.fx.experimental.proxy_tensor import make_fx

    try:
        gm = make_fx(pattern_cls.replacement, tracing_mode="fake")(*pattern_cls.inputs())
    except Exception:  # noqa: BLE001 - a replacement that does not trace alone belongs to no op
        return set()
    fused = emulated_fused_op_targets()
    return {target_name(n.target) for n in gm.graph.nodes if n.op == "call_function"} & set(fused)


def group_op(group: PatternGroup) -> str | None:
    fused = set()
    for cls in group.classes:
        fused |= _replacement_fused_ops(cls)
    return op_of_fused(fused)


def _target_group(target, name: str) -> PatternGroup:
    g = target.group(name)
    source = f"mindiesd/compilation/patterns/{g.module}.py" if g.module else ""
    classes = target.pattern_classes(g.group) if g.loaded else []
    return PatternGroup(g.group, g.flag, g.position, source, classes, True, g.error)


def _pattern_file_group(target, path: Path) -> PatternGroup:
    """PatternBase classes of a pattern file, imported inside the target's patterns package (relative imports
    such as `from ..passes.register_pattern_to_pass import PatternBase` resolve as they would in the tree)."""
    import importlib.util

    path = Path(path).resolve()
    if not path.is_file():
        raise BadInput(f"--pattern-file {path} does not exist", "pass the path of a *_pattern.py file")
    package = f"{PACKAGE}.compilation.patterns"
    name = f"{package}.{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    module.__package__ = package
    previous = sys.modules.get(name)
    sys.modules[name] = module  # stays: dynamo re-imports the search functions' module by name when it traces them
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - the user's file: its failure is the answer
        if previous is not None:
            sys.modules[name] = previous
        else:
            sys.modules.pop(name, None)
        raise BadInput(f"--pattern-file {path} does not import: {describe_error(exc, path.parent)}",
                       "fix the file so it imports under the target's compilation package") from exc
    base = target.module("passes.register_pattern_to_pass").PatternBase
    classes: list = []
    for value in vars(module).values():
        items = value if isinstance(value, (list, tuple)) else [value]
        for item in items:
            if isinstance(item, type) and issubclass(item, base) and item is not base and item not in classes:
                try:
                    item.name()
                except Exception:  # noqa: BLE001 - an abstract helper class, not a pattern
                    continue
                classes.append(item)
    if not classes:
        raise BadInput(f"--pattern-file {path} defines no PatternBase pattern",
                       "define a PatternBase subclass (or a list of them, XPatternGroup = [create(...)])")
    return PatternGroup(path.stem, None, None, str(path), classes, False)


def select_groups(target, op: str | None, groups: tuple[str, ...], pattern_file: Path | None) -> list[PatternGroup]:
    if pattern_file is not None:
        return [_pattern_file_group(target, pattern_file)] + [_target_group(target, g) for g in groups]
    if groups:
        return [_target_group(target, g) for g in groups]
    if not op:
        raise BadInput("nothing to debug", "pass --op (every group of that op), --group NAME or --pattern-file F")
    found = []
    for g in target.groups:
        if not g.loaded:
            continue
        group = _target_group(target, g.group)
        if group_op(group) == op:
            found.append(group)
    if not found:
        raise BadInput(f"no pattern group of the target replaces {op}", "pass --group NAME or --pattern-file F")
    return found


def run_group(target, group: PatternGroup, subjects, unit_subjects, has_model: bool, stage_name: str, per_site: dict,
              after_pass_texts: dict) -> GroupInfo:
    """Register `group` through the target's own pass, trace its patterns as registered, apply the pass to a copy
    of every stage graph and align each pattern at every candidate site (appended to `per_site`)."""

    error = group.error
    registering = [] if group.error else [(group.name, group.classes)]
    with record_registrations() as calls:
        runner = GroupRunner(target.tree.root, registering)
    if runner.errors:  # a pattern that fails to register is this group's answer
        error = error or f"registration failed: {runner.errors[0]}"
    pattern_infos, patterns = _trace_patterns(target, group, calls, runner)

    # the pass, on a copy of each stage graph: the model's and the group's own search functions'
    own = {c.name() for c in group.classes}
    runs = [s for s in subjects if s.unit_of is None or s.unit_of in own]
    runs += [s for name, s in unit_subjects.items() if name in own and s not in runs]
    hits = _PassHits()
    kernel_cache: dict = {}
    for subject in runs:
        for stage in subject.stages:
            raised = _apply_pass(runner, group.name, subject, stage, subjects, hits, after_pass_texts, kernel_cache)
            if raised is not None:
                error = error or f"the pass raised on {subject.name}: {describe_error(raised, target.tree.root)}"
    model_hits = sum(hits.model_by_pattern.values()) if has_model else None
    unit_hits = sum(hits.unit_by_pattern.values())
    before_freezing_hits = None
    if has_model and stage_name != STAGE_BEFORE_FREEZING:
        before_freezing_hits = sum(len(runner.apply(stage.gm).replacements)
                                   for stage in subjects[0].capture.stage(STAGE_BEFORE_FREEZING))
    silent = bool(has_model and unit_hits and model_hits == 0)
    ctx_base = {"stage": stage_name, "group": group.name, "unit_hits": unit_hits,
                "model_hits": model_hits if has_model else None}
    for subject in runs:
        if subject not in subjects:
            continue
        si = subjects.index(subject)
        for ci, site in enumerate(subject.sites):
            per_site.setdefault((si, ci), []).append(group_at_site(
                group.name, patterns, site, subject.origins(site.stage), hits.replaced_at.get((si, ci), Counter()),
                ctx_base, hits.shared_at.get((si, ci), Counter())))
    return GroupInfo(
        group=group.name, flag=group.flag, position=group.position, source=group.source, error=error,
        patterns=tuple(pattern_infos), unit_hits=unit_hits, unit_by_pattern=dict(hits.unit_by_pattern),
        model_hits=model_hits, model_by_pattern=dict(hits.model_by_pattern),
        model_hits_before_freezing=before_freezing_hits, outside_sites=tuple(hits.outside),
        silent_miss=silent, kernels=tuple(hits.kernels),
    )


@dataclass
class _PassHits:
    """What one group's pass replaced, over every subject and stage it ran on."""

    unit_by_pattern: Counter = field(default_factory=Counter)
    model_by_pattern: Counter = field(default_factory=Counter)
    replaced_at: dict = field(default_factory=dict)  # (subject, site) -> Counter of patterns
    shared_at: dict = field(default_factory=dict)  # replacements inside a site that another site holds too
    outside: list = field(default_factory=list)
    kernels: list = field(default_factory=list)  # the model's new fused calls on the NPU's kernel (SiteKernel)


def _trace_patterns(target, group: PatternGroup, calls: list, runner) -> tuple[list[PatternInfo], list]:
    """Each pattern of the group traced again exactly as register_replacement traced it: its PatternInfo, and the
    PatternGraphs of those that traced."""

    entries = runner.entries_by_pattern
    pattern_infos, patterns = [], []
    for cls in group.classes:
        name = cls.name()
        call = call_for(cls, calls)
        entry = (entries.get(name) or [None])[0]
        if call is None:
            reason = runner.registration_errors.get(name, "register_replacement was not called for it")
            pattern_infos.append(PatternInfo(name, "", "", 0, None, (), "", "", f"not registered: {reason}"))
            continue
        try:
            pg = trace_registered(name, call, entry)
        except Exception as exc:  # noqa: BLE001
            pattern_infos.append(PatternInfo(name, "", "", 0, None, (), "", "",
                                             f"tracing the search function failed: {describe_error(exc)}"))
            continue
        patterns.append(pg)
        trace_fn = getattr(call.trace_fn, "__qualname__", str(call.trace_fn))
        pattern_infos.append(PatternInfo(
            name=name, source_file=short_source(pg.source_file, target.tree.root),
            traced_with=f"{trace_fn} with {pg.decomposition_source}", decompositions=pg.decompositions,
            same_as_registered=pg.same_as_registered,
            anchor=pattern_anchor_targets(entry.pattern) if entry is not None else (),
            printed=pg.printed(), graph=pg.readable(),
        ))
    return pattern_infos, patterns


def _apply_pass(runner, group_name: str, subject, stage, subjects, hits: _PassHits, after_pass_texts: dict,
                kernel_cache: dict) -> BaseException | None:
    """The group's pass on a copy of one stage graph, its replacements credited to `hits` (on the model, the fused
    calls it made judged on the NPU's kernel); the exception a pattern raised inside the matcher, if one did."""

    run = runner.apply(stage.gm, group_name, keep_graph=True)
    if run.raised is not None:
        return run.raised
    if subject.unit_of is None:
        hits.model_by_pattern.update(run.by_pattern())
        hits.kernels += [k for k in check_graph(run.graph, run.replacements, kernel_cache) if k.pattern]
        after_pass_texts[f"{group_name}.{stage.graph_index}"] = run.graph.print_readable(
            print_output=False, include_stride=False, include_device=False, colored=False)
    else:
        hits.unit_by_pattern.update(run.by_pattern())
    if subject in subjects:
        attribute(subjects.index(subject), subject, stage, run.replacements, hits.replaced_at, hits.outside,
                  hits.shared_at)
    return None


def run_in_registry_order(target, selected: list[PatternGroup], subject: Subject, per_site: dict,
                   stage_name: str) -> RegistryRun:
    """Apply every default-enabled group at once, registered as the backend registers them (pattern_registry
    order; groups outside it and --pattern-file groups after), and mark each site a selected group matches
    alone but loses to a group registered earlier: the ordering form of mismatch type 5."""
    import dataclasses

    config = target.module("compiliation_config").FusionPatterns
    defaults = {f.name for f in dataclasses.fields(config) if f.default is True}
    chosen = {g.name for g in selected if g.registered and not g.error}
    # as the backend registers them: pattern_registry order, then exported groups outside it
    enabled = sorted((g for g in target.groups if g.loaded and (g.flag in defaults or g.group in chosen)),
                     key=lambda g: (g.position is None, g.position or 0))
    names = [g.group for g in enabled]
    files = [g for g in selected if not g.registered]
    runner = GroupRunner(target.tree.root, [(n, target.registration_of(n)) for n in names]
                         + [(g.name, g.classes) for g in files])
    replaced_at: dict[tuple[int, int], Counter] = {}
    totals: Counter = Counter()
    owner: dict[str, str] = {}  # pattern -> its group, from the runs' own records
    for stage in subject.stages:
        applied = runner.apply(stage.gm).replacements
        totals.update(a.group for a in applied)
        owner.update((a.pattern, a.group) for a in applied)
        attribute(0, subject, stage, applied, replaced_at, [])
    order = names + [g.name for g in files]
    conflicts = 0
    for (si, ci), results in per_site.items():
        if si != 0:
            continue
        won = Counter()
        for pattern, n in replaced_at.get((si, ci), Counter()).items():
            won[owner.get(pattern, pattern)] += n
        updated = []
        for ga in results:
            earlier = [g for g in won if g != ga.group and g in order and order.index(g) < _index(order, ga.group)]
            if ga.verdict == "matches" and ga.group not in won and earlier:
                ga = _ordering_conflict(ga, earlier, won, order, stage_name)
                conflicts += 1
            updated.append(ga)
        per_site[(si, ci)] = updated
    note = (f"{len(order)} groups registered in this order (the backend's defaults: every FusionPatterns flag that "
            "defaults to True, in pattern_registry order; groups outside it and pattern files after them)")
    return RegistryRun(tuple(order), dict(totals), conflicts, note)


def _index(order: list[str], group: str) -> int:
    return order.index(group) if group in order else len(order)


def _ordering_conflict(ga: GroupAtSite, earlier: list[str], won: Counter, order: list[str],
                       stage_name: str) -> GroupAtSite:
    import dataclasses

    entry = mismatch_type(5)
    users = ", ".join(f"{g} (position {order.index(g) + 1} of {len(order)})" for g in earlier)
    fields = {"users": users, "group": ga.group, "stage": stage_name}
    fix = entry.cause("ordering").fix.format_map(_Missing(fields))
    alone = ", ".join(f"{k} ×{v}" for k, v in ga.replaced_by.items())
    evidence = (f"alone, {ga.group} replaces this site ({alone})",
                "with the backend's default groups in registration order the site is replaced by "
                + ", ".join(f"{g} ×{n}" for g, n in won.items()),
                f"{ga.group} is at position {_index(order, ga.group) + 1} of {len(order)}")
    verdict = MismatchVerdict(5, entry.name, "ordering", entry.path, fix, evidence)
    patterns = tuple(dataclasses.replace(p, verdict="mismatch", mismatch=verdict) if p.pattern == ga.closest else p
                     for p in ga.patterns)
    return GroupAtSite(ga.group, "mismatch", ga.replaced_by, 5, f"type 5 ({entry.name}): {fix}", ga.closest,
                       patterns)


class _Missing(dict):
    def __missing__(self, key: str) -> str:
        return "?"


def attribute(si: int, subject, stage, applied, replaced_at: dict, outside: list, shared_at: dict | None = None
              ) -> None:
    """Credit each replacement to the candidate site holding its node (by name: the pass ran on a copy): the first
    such site counts it; other sites holding the same node (a block's inline modulation and the norm module
    inside it) note it in `shared_at`, so they are not reported as missed."""
    for app in applied:
        holders = [ci for ci, site in enumerate(subject.sites)
                   if site.stage is stage and any(n.name == app.node for n in site.starts())]
        home = holders[0] if holders else None
        if shared_at is not None:
            for other in holders[1:]:
                shared_at.setdefault((si, other), Counter())[app.pattern] += 1
        if home is None:
            where = f" in {app.module_path}" if app.module_path else ""
            outside.append(f"{app.pattern} at {app.node} ({app.target}){where} of {subject.name}")
            continue
        replaced_at.setdefault((si, home), Counter())[app.pattern] += 1


def short_source(path: str, root: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path(root).resolve()))
    except ValueError:
        return path
