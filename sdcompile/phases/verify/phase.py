"""Phase 4, `sdcompile verify`: run the target's own backend with only the chosen pattern group(s) enabled.

Unit level (unit.py), per pattern of a group: a module whose forward is the pattern's own search function,
compiled through the target's MindieSDBackend — the self-consistency test: replacements, the fused op present and
the original ops gone after the pass, numerics against eager; when a pattern replaces nothing, where it and the
graph the pass received part (diagnosis.py, with `sdcompile debug`'s alignment): the first differing node pair,
its mismatch type and the fix.

Model level (model_level.py): the same group on a real model graph (phase 6 layer 1 in miniature): replacements
and where they landed. A unit hit with zero model hits is mismatch type 7.

On a real NPU the compiled and eager modules are also timed (upstream's second assertion); elsewhere the
report says that this was not exercised. verify.json and verify.md are kept in the workspace (report_files.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from sdcompile.core.environment import environment_fields
from sdcompile.core.npu.device import activate_for_command
from sdcompile.core.npu.emulation.tree_ops import gaps
from sdcompile.core.target.discovery import find_target
from sdcompile.core.target.loader import load_target
from sdcompile.core.target.registry import GRAPH_ENTRIES
from sdcompile.core.zoo.models import resolve_model
from sdcompile.phases.choices import Decision
from sdcompile.phases.pair_scope import holds_pair
from sdcompile.phases.scaffold.facts import ScaffoldFacts, pair_facts
from sdcompile.phases.verify.evidence import folder_name
from sdcompile.phases.verify.graph_pass import graph_pass_names, run_graph_pass_test
from sdcompile.phases.verify.model_level import build_model, run_model_level, with_analyzed_sites
from sdcompile.phases.verify.report_files import write_report
from sdcompile.phases.verify.results import GroupResult, ModelLevel, PatternModuleStatus, UnitCase, VerifyReport
from sdcompile.phases.verify.unit import run_unit_case
from sdcompile.rendering import npu_kernels
from sdcompile.testing.numerics import DEFAULT_MIN_COSINE, UPSTREAM_MIN_COSINE
from sdcompile.util.errors import BadInput
from sdcompile.workspace.store import Workspace

Progress = Callable[[str], None]


def _group_summary(unit: tuple[UnitCase, ...], model: ModelLevel | None, load_error: str | None,
                   entries: bool = False) -> str:
    if load_error:
        return f"did not load: {load_error}"
    hits = sum(1 for c in unit if c.replacements >= 1)
    parts = (["a GraphPatternEntry carrier: no search function to run alone"] if entries else
             [f"{hits}/{len(unit)} search function(s) replaced by the group"])
    failing = [c for c in unit if not c.passed]
    if failing:
        c = failing[0]
        if c.error:
            parts.append(f"{c.pattern}: {c.error}")
        elif c.divergence is not None:
            m = c.divergence.mismatch
            parts.append(f"{c.pattern}: " + (f"type {m.type} ({m.name}): " if m else "") + c.divergence.reason)
        elif c.numerics is not None and not c.numerics.passed:
            parts.append(f"{c.pattern}: cosine {c.numerics.cosine:.6f} < {c.numerics.min_cosine}")
        elif npu_kernels.summary(c.kernels):
            parts.append(f"{c.pattern}: {npu_kernels.summary(c.kernels)}")
    if model is not None:
        on_npu = npu_kernels.summary(model.kernels)
        parts.append(f"{model.model}: {model.replacements} replacement(s)"
                     + (f" — mismatch type {model.mismatch_type}" if model.mismatch_type else "")
                     + (f" — {on_npu}" if on_npu else (f" — error: {model.error}" if model.error else "")))
    return "; ".join(parts)


def select_groups(target, groups: tuple[str, ...], all_groups: bool, model: str | None, op: str | None) -> list:
    """The groups to verify: all, the named ones, or the model/op pair's own <Model><Op>PatternGroup."""
    if all_groups:
        return list(target.groups)
    if groups:
        return [target.group(g) for g in groups]
    if model and op:
        from sdcompile.core.target.naming import registration_names

        names = registration_names(model, op)
        try:
            return [target.group(names.group)]
        except BadInput:
            pass
        try:  # a GraphPatternEntry carrier is known by its flag
            return [target.group(names.flag)]
        except BadInput as exc:
            raise BadInput(
                f"no pattern group {names.group} (derived from --model {model} --op {op}) in {target.tree.root}",
                f"scaffold and register it first, or pass --group for an existing group ({exc.fix})",
            ) from exc
    raise BadInput("nothing to verify", "pass --group NAME, --all-groups, or --model and --op")


def _pair_model_word(model: str | None, model_file: str | None, build=None) -> str | None:
    """The model word of the pair's group name: the zoo's short name (`FluxTransformer2DModel` -> flux), a
    capture's or a --config's class."""
    if model_file or not (model or (build is not None and (build.capture or build.config))):
        return model
    try:
        from sdcompile.core.zoo.models import resolve_model

        return resolve_model(model, None, build).name
    except BadInput:
        return model


@holds_pair()
def run_verify(
    repo: Path | str | None = None,
    workdir: Path | str | None = None,
    group: str | Sequence[str] | None = None,
    all_groups: bool = False,
    model: str | None = None,
    model_file: str | None = None,
    op: str | None = None,
    dtype: str | None = None,
    min_cosine: float = DEFAULT_MIN_COSINE,
    plain_cpu: bool = False,
    progress: Progress | None = None,
    built_model=None,
    timeout: float | None = None,
    build=None,
    decided: ScaffoldFacts | None = None,
) -> VerifyReport:
    """Everything `sdcompile verify` does; see the module docstring. `group`: one group (name or flag) or several,
    verified in one report; without it, a model/op pair's carriers as its scaffold record names them (the groups
    it reused, the group or entries it generated, its custom pass; `decided`, else its record), else its derived
    names; none when the model graph already calls the fused op (the report is then `skipped`). `built_model` (a zoo
    BuiltModel) is used instead of building `model`/`model_file` again, for callers that already hold one.
    `timeout`: seconds the model's build and each forward may take (None: $SDCOMPILE_TIMEOUT, else 600; 0: no
    limit)."""

    if not 0.0 < min_cosine <= 1.0:
        raise BadInput(f"--min-cosine {min_cosine} is outside (0, 1]", "use e.g. 0.999")
    wanted = (group,) if isinstance(group, str) else tuple(group or ())
    by_build = build is not None and (build.capture is not None or build.config is not None)
    if not (wanted or all_groups or ((model or model_file or by_build) and op)):
        raise BadInput("nothing to verify", "pass --group NAME, --all-groups, or --model and --op")
    device = activate_for_command(plain_cpu)  # before anything imports diffusers

    say = progress or (lambda _msg: None)
    tree = find_target(repo)
    say(f"loading {tree.root} under {device.label}")
    target = load_target(tree)
    word = _pair_model_word(model, model_file, build)
    if not (wanted or all_groups) and op and (model or model_file or by_build):
        label = resolve_model(model, model_file, build).name
        facts = decided or pair_facts(Workspace(workdir), label, op)
        if facts is not None and facts.fused_by_model:
            return _nothing_to_verify(tree, target, device, label, op, min_cosine, workdir)
        wanted = facts.carriers if facts is not None else ()
    if not all_groups and len(wanted) <= 1 and (
            names := graph_pass_names(tree, target, wanted[0] if wanted else None, word, op)) is not None:
        return _verify_graph_pass(tree, target, device, names, model, model_file, op, plain_cpu, timeout, build,
                                  workdir, say, min_cosine)
    groups = select_groups(target, wanted, all_groups, word, op)
    model_label = model_file or model or (str(build.capture or build.config) if by_build else None)
    if built_model is None and model_label:
        say(f"building {model_label}")
        built_model = build_model(model, model_file, dtype, timeout, build)
    if built_model is not None:
        model_label = built_model.name

    ws = Workspace(workdir)
    pair = (model_label, op) if model_label and op else None
    report_dir = (ws.pair_dir(*pair) / "verify") if pair else ws.root / "_verify" / folder_name(
        "all-groups" if all_groups else groups[0].group)
    run = _Run(target, built_model, all_groups, min_cosine, ws, pair, report_dir, len(groups) > 1, say)
    results = [_verify_group(run, g) for g in groups]
    notes = _notes(device, all_groups, built_model is not None)
    timing_note = ("compiled vs eager timed on the NPU" if device.is_real else
                   f"compiled vs eager timing runs only on a real NPU; not exercised here ({device.label})")
    report = VerifyReport(
        **environment_fields(device, tree, target),
        min_cosine=min_cosine,
        upstream_min_cosine=UPSTREAM_MIN_COSINE,
        pattern_modules=tuple(PatternModuleStatus(m.module.rsplit(".", 1)[-1], m.ok, m.error)
                              for m in target.pattern_modules),
        groups=tuple(results),
        model=model_label,
        dtype=(built_model.dtype_name if built_model else None),
        pair=pair,
        passed=bool(results) and all(r.passed for r in results),
        timing_note=timing_note,
        notes=tuple(notes),
        report_dir=str(report_dir),
    )
    write_report(ws, report, report_dir)
    return report


def _verify_graph_pass(tree, target, device, names, model, model_file, op, plain_cpu, timeout, build, workdir, say,
                       min_cosine) -> VerifyReport:
    """A custom graph pass: its generated test, which builds the model itself, in place of groups."""

    ws = Workspace(workdir)
    label = resolve_model(model, model_file, build).name if (model or model_file) else None
    pair = (label, op) if label and op else None
    report_dir = ws.pair_dir(*pair) / "verify" if pair else ws.root / "_verify" / folder_name(names.pass_class)
    report_dir.mkdir(parents=True, exist_ok=True)
    say(f"running {names.pass_test}")
    tested = run_graph_pass_test(tree, names, plain_cpu, timeout, report_dir / "graph_pass_test.log")
    report = VerifyReport(
        **environment_fields(device, tree, target), min_cosine=min_cosine, upstream_min_cosine=UPSTREAM_MIN_COSINE,
        pattern_modules=tuple(PatternModuleStatus(m.module.rsplit(".", 1)[-1], m.ok, m.error)
                              for m in target.pattern_modules),
        groups=(), model=label, dtype=None, pair=pair, passed=tested.passed, timing_note="",
        report_dir=str(report_dir), graph_pass=tested)
    write_report(ws, report, report_dir)
    return report


def _nothing_to_verify(tree, target, device, label: str, op: str, min_cosine: float, workdir) -> VerifyReport:
    """Phase 4 of a pair whose model graph already calls the fused op at every site: nothing to verify, recorded
    as skipped."""
    ws = Workspace(workdir)
    report_dir = ws.pair_dir(label, op) / "verify"
    report_dir.mkdir(parents=True, exist_ok=True)
    report = VerifyReport(
        **environment_fields(device, tree, target), min_cosine=min_cosine, upstream_min_cosine=UPSTREAM_MIN_COSINE,
        pattern_modules=(), groups=(), model=label, dtype=None, pair=(label, op), passed=True, timing_note="",
        report_dir=str(report_dir), skipped=Decision.ALREADY_FUSED)
    write_report(ws, report, report_dir)
    return report


@dataclass(frozen=True)
class _Run:
    """What every group of one verify run shares."""

    target: object  # the loaded target
    built_model: object | None  # a zoo BuiltModel, for the model level
    all_groups: bool
    min_cosine: float
    ws: object  # the Workspace
    pair: tuple[str, str] | None
    report_dir: Path
    several: bool  # more than one group: each keeps its evidence in a folder of its own
    say: Progress


def _verify_group(run: _Run, g) -> GroupResult:
    """One group: its unit level, then (with a model) its model level, and its gate."""
    run.say(f"{g.group}")
    if not g.loaded:
        return GroupResult(g.group, g.flag, g.position, g.module, g.error, (), None, False, False,
                           _group_summary((), None, g.error))
    group_dir = run.report_dir / folder_name(g.group) if run.several else run.report_dir
    if g.carrier == GRAPH_ENTRIES:
        # a GraphPatternEntry carrier has no search function to run alone: its chains are the model graph's own,
        # checked where they are (scaffold's gate ran each fused call against its chain)
        unit, unit_passed = (), run.built_model is not None
    else:
        unit = tuple(run_unit_case(run.target, g, cls, run.min_cosine, group_dir)
                     for cls in run.target.pattern_classes(g.group))
        unit_passed = bool(unit) and all(c.passed for c in unit)
    model_level = None
    if run.built_model is not None:
        run.say(f"{g.group} on {run.built_model.name}")
        model_level = run_model_level(run.target, g, run.built_model,
                                      any(c.replacements for c in unit) or g.carrier == GRAPH_ENTRIES,
                                      run.min_cosine, group_dir, classify_type7=not run.all_groups)
        if run.pair:
            model_level = with_analyzed_sites(model_level, run.ws, *run.pair)
    passed = unit_passed and (model_level is None or run.all_groups or model_level.passed)
    return GroupResult(g.group, g.flag, g.position, g.module, None, unit, model_level, unit_passed,
                       passed, _group_summary(unit, model_level, None, g.carrier == GRAPH_ENTRIES))


def _notes(device, all_groups: bool, has_model: bool) -> list[str]:
    notes = [f"{op}: some calls ran the tree's CPU fallback: {why}" for op, why in gaps().items()]
    if device.mode == "plain-cpu":
        notes.append("--plain-cpu: diffusers traced the model as a process without torch_npu does; the target's "
                     "fused ops still run on sdcompile's CPU kernels")
    if all_groups and has_model:
        notes.append("--all-groups with a model: model-level counts are shown for every group; the gate is each "
                     "group's self-consistency (groups are written for different models)")
    return notes


__all__ = ["run_verify", "select_groups"]
