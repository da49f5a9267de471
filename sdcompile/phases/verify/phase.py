"""Phase 4, `sdcompile verify`: run the target's own backend with only the chosen pattern group(s) enabled.

Unit level, per pattern of a group: a module whose forward is the pattern's own search function, run on its
own example inputs (materialised from the meta device) and compiled through the target's MindieSDBackend —
the self-consistency test. Evidence, vLLM-style: the replacement count (inductor's counter and the pass's own
"PatternMatchPass replace N patterns." line), the fused op present and the original ops gone in the graph
after the pass, numerics against eager. When a pattern does not replace anything, where the pattern as
registered and the graph the pass received part, read by `sdcompile debug`'s machinery (graph.pattern_graph,
graph.align, graph.mismatch through phases.debug_sites.align_pattern): the first differing node pair, its
mismatch type and the fix.

Model level: the same group on a real model graph (phase 6 layer 1 in miniature): replacements and where
they landed. A unit hit with zero model hits is mismatch type 7.

On a real NPU the compiled and eager modules are also timed (upstream's second assertion); elsewhere the
report says that this was not exercised.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from sdcompile.core.environment import environment_fields
from sdcompile.phases.verify.results import (  # noqa: F401 - verify's results, re-exported
    Divergence,
    GraphCheck,
    GroupResult,
    ModelLevel,
    ModelSite,
    PatternModuleStatus,
    UnitCase,
    VerifyReport,
)
from sdcompile.testing.numerics import (
    DEFAULT_MIN_COSINE,
    UPSTREAM_MIN_COSINE,
    approximation_atol,
    compare,
    example_inputs,
    time_calls,
)
from sdcompile.util.errors import BadInput

Progress = Callable[[str], None]


def _fused_targets() -> frozenset[str]:
    from sdcompile.core.target.loader import emulated_fused_op_targets

    return emulated_fused_op_targets()


def _replacement_fused_ops(pattern_cls, inputs) -> tuple[str, ...]:
    """The fused ops the pattern's replacement traces to (what must appear after the pass)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from sdcompile.core.target.graph_snapshots import target_name

    try:
        gm = make_fx(pattern_cls.replacement, tracing_mode="fake")(*inputs)
    except Exception:  # noqa: BLE001 - then the graph check cannot name the fused op; numerics still run
        return ()
    fused = _fused_targets()
    return tuple(dict.fromkeys(target_name(n.target) for n in gm.graph.nodes
                               if n.op == "call_function" and target_name(n.target) in fused))


def _replacement_targets(pattern_cls, inputs) -> set[str]:
    from torch.fx.experimental.proxy_tensor import make_fx

    from sdcompile.core.target.graph_snapshots import target_name

    try:
        gm = make_fx(pattern_cls.replacement, tracing_mode="fake")(*inputs)
    except Exception:  # noqa: BLE001
        return set()
    return {target_name(n.target) for n in gm.graph.nodes if n.op == "call_function"}


class _SearchFunctionModule:
    """Builds `forward = the pattern's search function` as an nn.Module (upstream's unit tests are the same)."""

    @staticmethod
    def build(fn):
        import torch

        class SearchFunction(torch.nn.Module):
            def forward(self, *args):
                return fn(*args)

        return SearchFunction()


def _synchronize(device) -> Callable[[], None]:
    def sync() -> None:
        import torch

        torch.npu.synchronize()

    return sync if device.is_real else (lambda: None)


def _write(path: Path, text: str) -> Path:
    from sdcompile.util.fsutil import atomic_write_text

    atomic_write_text(path, text)
    return path


# ------------------------------------------------------------------------------------------------ unit level
def run_unit_case(target, group, pattern_cls, min_cosine: float, evidence_dir: Path | None) -> UnitCase:
    """One pattern of `group` against a module whose forward is its own search function."""
    import torch

    from sdcompile.core.graph.pattern_graph import call_for, record_registrations
    from sdcompile.core.target.failures import describe_error

    device = target.device
    name = pattern_cls.name()
    try:
        inputs, specs = example_inputs(pattern_cls)
    except Exception as exc:  # noqa: BLE001 - a broken inputs() is this pattern's failure
        return UnitCase(name, (), 0, (), 0, {}, None, None, None, None,
                        f"inputs() failed: {describe_error(exc, target.tree.root)}", False)
    inputs = [t.to(device.tensor_device) if isinstance(t, torch.Tensor) else t for t in inputs]
    module = _SearchFunctionModule.build(pattern_cls.pattern).to(device.tensor_device)
    evidence: list[str] = []
    with torch.no_grad(), target.session([group.group]) as session:
        error = None
        compiled_out = None
        calls: list = []
        try:
            with record_registrations() as calls:  # what register_replacement was given, for the diagnosis
                session.activate()
            compiled = torch.compile(module, backend=session.backend(), dynamic=False)
            compiled_out = compiled(*inputs)
        except Exception as exc:  # noqa: BLE001 - a pattern may throw inside the matcher: the group's failure
            error = describe_error(exc, target.tree.root)
        entries = session.pattern_entries().get(name, [])
        if name in session.registration_errors:
            error = f"registration failed: {session.registration_errors[name]}"
        registered = [p for p in session.registered_patterns() if p.name == name]
        eager_out = module(*inputs)
        approximation = approximation_atol(_replacement_fused_ops(pattern_cls, inputs))
        numerics = (compare(compiled_out, eager_out, min_cosine, inputs, approximation)
                    if compiled_out is not None else None)
        capture = session.graphs[-1] if session.graphs else None
        graph_check = None
        if capture is not None and capture.after is not None:
            # The module is the search function, so every op of its graph that the replacement does not itself
            # contain must be gone after the pass (vLLM's check_before_ops / check_after_ops).
            expected = _replacement_fused_ops(pattern_cls, inputs)
            before_ops = capture.before.op_counts()
            originals = tuple(sorted(set(before_ops) - _replacement_targets(pattern_cls, inputs) - {"getitem"}))
            after = capture.after.op_counts()
            found = {op: after.get(op, 0) for op in expected}
            left = {op: after[op] for op in originals if after.get(op, 0)}
            graph_check = GraphCheck(expected, found, originals, left,
                                     all(found.values()) if expected else None, not left)
        replacements = session.replacements
        log_counts = tuple(session.pass_log_counts)
        by_pattern = dict(session.hits_by_pattern)
        own_hits = by_pattern.get(name, 0)
        divergence = None
        call = call_for(pattern_cls, calls)
        if error is None and own_hits == 0 and capture is not None and entries and call is not None:
            # Judged on the graph as the pass received it (a sibling pattern may have rewritten the one returned).
            divergence = diagnose(target, group.group, name, call, entries[0], capture, len(session.graphs) - 1,
                                  replacements)
            siblings = [k for k, v in by_pattern.items() if v and k != name]
            if divergence.stage == "matches" and siblings:
                divergence = dataclasses.replace(
                    divergence,
                    reason=f"this pattern accepts the graph too, but {', '.join(siblings)} (registered earlier in the "
                    "group) matched it first: on this graph the variants are interchangeable")
        timing = None
        if device.is_real and error is None:
            timing = time_calls(lambda: module(*inputs), lambda: compiled(*inputs), _synchronize(device))
        if evidence_dir is not None:
            folder = evidence_dir / "unit" / _safe(name)
            if capture is not None:
                evidence.append(str(_write(folder / "aot.pattern_match_pass.before.txt", capture.before.code)))
                if capture.after is not None:
                    evidence.append(str(_write(folder / "aot.pattern_match_pass.after.txt", capture.after.code)))
            if registered:
                text = "\n\n".join(f"# registered pattern {i}: {p.name}\n{p.printed}" for i, p in enumerate(registered))
                evidence.append(str(_write(folder / "registered_pattern.txt", text + "\n")))
    passed = (error is None and replacements >= 1 and numerics is not None and numerics.passed
              and graph_check is not None and graph_check.fused_present is not False and graph_check.originals_gone)
    return UnitCase(name, specs, replacements, log_counts, own_hits, by_pattern, graph_check, numerics, divergence,
                    timing, error, passed, tuple(evidence))


def diagnose(target, group: str, name: str, call, entry, capture, graph_index: int, replacements: int) -> Divergence:
    """Where pattern `name` (its registration `call` and registered `entry`) and the graph the pass received in
    `capture` (a loader.PassCapture) part: debug's alignment over the whole graph, as debug reads a unit site."""
    import torch

    from sdcompile.core.graph.candidates import whole_graph_site
    from sdcompile.core.graph.capture import STAGE_BEFORE_FREEZING, StageGraph
    from sdcompile.core.graph.pattern_graph import trace_registered
    from sdcompile.core.target.failures import describe_error
    from sdcompile.phases.debug.sites import align_pattern

    try:
        pattern = trace_registered(name, call, entry)
    except Exception as exc:  # noqa: BLE001 - the verdict (no replacement) stands without the detail
        return Divergence("error", None, None, "tracing the search function as register_replacement did failed: "
                          f"{describe_error(exc, target.tree.root)}", None)
    gm = torch.fx.GraphModule(capture.graph_module, capture.before_graph)
    stage = StageGraph(STAGE_BEFORE_FREEZING, graph_index, gm, {}, "")
    site = whole_graph_site(stage, f"the search function of {name}")
    context = {"stage": STAGE_BEFORE_FREEZING, "group": group, "unit_hits": replacements, "model_hits": None}
    try:
        at = align_pattern(pattern, site, {}, 0, context)
    except Exception as exc:  # noqa: BLE001 - as above
        return Divergence("error", None, None, f"aligning the pattern with the graph failed: "
                          f"{describe_error(exc, target.tree.root)}", None)
    first = at.first
    if first is not None:
        return Divergence(first.stage, first.model.text if first.model else None,
                          first.pattern.text if first.pattern else None, first.detail, at.torch_says, at.start,
                          at.matched, at.total, at.mismatch)
    stage_word = "matches" if at.verdict == "accepted" else "unexplained"
    reason = at.notes[-1] if at.notes else at.torch_says
    if at.mismatch is not None:  # a pattern input bound to a constant, which torch's matcher rejects
        stage_word, reason = "structure", at.mismatch.evidence[0]
    return Divergence(stage_word, None, None, reason, at.torch_says, at.start, at.matched, at.total, at.mismatch)


def _safe(label: str) -> str:
    from sdcompile.workspace.store import safe_name

    return safe_name(label)


# ----------------------------------------------------------------------------------------------- model level
def build_model(model: str | None, model_file: str | None, dtype: str | None):
    """The model through sdcompile's zoo, with the same options as `analyze` (returns zoo's BuiltModel)."""
    from sdcompile.core.zoo.models import build_model as zoo_build
    from sdcompile.core.zoo.models import resolve_model

    return zoo_build(resolve_model(model, model_file), dtype or "bf16")


def _site_source(trace: str) -> str:
    """The innermost frame of a node's recorded stack outside torch itself: `file:line in fn: code`."""
    import torch

    torch_dir = str(Path(torch.__file__).parent)
    lines = [ln.strip() for ln in trace.strip().splitlines() if ln.strip()]
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].startswith("File ") and torch_dir not in lines[i]:
            code = lines[i + 1] if i + 1 < len(lines) and not lines[i + 1].startswith("File ") else ""
            where = lines[i].replace("File ", "", 1).replace('"', "").replace(", line ", ":").replace(", in ", " in ")
            where = where.split("site-packages/", 1)[-1]
            return f"{where}: {code}".strip(": ")
    return ""


def run_model_level(target, group, built, unit_hit: bool,
                    min_cosine: float, evidence_dir: Path | None, classify_type7: bool = True) -> ModelLevel:
    import torch

    from sdcompile.core.target.failures import describe_error

    device = target.device
    module = built.module.to(device.tensor_device)
    inputs = {k: v.to(device.tensor_device) if isinstance(v, torch.Tensor) else v for k, v in built.inputs.items()}
    evidence: list[str] = []
    with torch.no_grad(), target.session([group.group]) as session:
        error, compiled_out = None, None
        try:
            session.activate()
            compiled = torch.compile(module, backend=session.backend(), dynamic=False)
            compiled_out = compiled(**inputs)
        except Exception as exc:  # noqa: BLE001 - patterns can throw inside the matcher: the group's failure
            error = describe_error(exc, target.tree.root)
        eager_out = module(**inputs)
        fused_after = {op for c in session.graphs if c.after is not None for op in c.after.op_counts()}
        approximation = approximation_atol(fused_after & _fused_targets())
        # tolerances of the model's compute dtype (its inputs), not of an output a final fp32 layer upcasts
        numerics = (compare(compiled_out, eager_out, min_cosine, inputs, approximation)
                    if compiled_out is not None else None)
        sites = [ModelSite(a.pattern, a.node, a.target, a.module_path, _site_source(a.stack_trace))
                 for a in session.applications]
        fused_targets = _fused_targets()
        fused_before: Counter = Counter()
        for capture in session.graphs:
            fused_before.update({op: n for op, n in capture.before.op_counts().items() if op in fused_targets})
        timing = None
        if device.is_real and error is None:
            timing = time_calls(lambda: module(**inputs), lambda: compiled(**inputs), _synchronize(device), 5, 1)
        if evidence_dir is not None:
            folder = evidence_dir / "model" / _safe(built.name)
            for i, capture in enumerate(session.graphs):
                evidence.append(str(_write(folder / f"graph{i}.aot.pattern_match_pass.before.txt",
                                           capture.before.code)))
                if capture.after is not None:
                    evidence.append(str(_write(folder / f"graph{i}.aot.pattern_match_pass.after.txt",
                                               capture.after.code)))
        replacements, log_counts, graphs = session.replacements, tuple(session.pass_log_counts), len(session.graphs)
        by_pattern = dict(session.hits_by_pattern)
    error_source = None
    if error is not None:
        baseline = _baseline_compile_error(target, module, inputs)
        error_source = "model" if baseline else "group"
        if baseline:
            error = f"{built.name} does not compile through MindieSDBackend even with no pattern group: {baseline}"
    mismatch, advice = None, None
    if error is None and replacements == 0 and unit_hit and classify_type7:
        mismatch = 7
        advice = (f"the pattern replaces its own search function but nothing in {built.name}: run "
                  f"`sdcompile debug {_model_option(built)} --group {group.group}` to see where the model graph and "
                  "the pattern part (parameters held as module attributes are the usual cause)")
    passed = error is None and replacements >= 1 and numerics is not None and numerics.passed
    return ModelLevel(built.name, built.dtype_name, graphs, replacements, log_counts, by_pattern, tuple(sites),
                      dict(fused_before), numerics, timing, error, error_source, mismatch, advice, passed,
                      tuple(evidence))


def analyzed_sites(ws, model: str, op: str) -> tuple[str, ...]:
    """The submodule paths phase 1 (`sdcompile analyze`) found for this pair's op, from its analysis.json."""
    from sdcompile.workspace.artifacts import read_artifact

    path = ws.pair_dir(model, op, create=False) / "analysis.json"
    if not path.is_file():
        return ()
    try:
        analysis = read_artifact("analysis", path).get("analysis") or {}
        return tuple(dict.fromkeys(site["path"] for impl in analysis.get("implementations", ())
                                   for site in impl.get("sites", ()) if site.get("path")))
    except (ValueError, AttributeError, TypeError, KeyError):
        return ()  # an analysis.json of another shape is not this phase's to judge


def _model_option(built) -> str:
    spec = getattr(built, "spec", None)
    if spec is not None and getattr(spec, "kind", "") == "file":
        return f"--model-file {spec.path}:{spec.factory}"
    return f"--model {built.name}"


def _baseline_compile_error(target, module, inputs) -> str | None:
    """Whether the model compiles through the backend with no group enabled (None) or how it fails."""
    import torch

    from sdcompile.core.target.failures import describe_error

    with torch.no_grad(), target.session([]) as session:
        try:
            torch.compile(module, backend=session.backend(), dynamic=False)(**inputs)
        except Exception as exc:  # noqa: BLE001 - reported as the model's failure
            return describe_error(exc, target.tree.root)
    return None


# ---------------------------------------------------------------------------------------------- the phase
def _group_summary(unit: tuple[UnitCase, ...], model: ModelLevel | None, load_error: str | None) -> str:
    if load_error:
        return f"did not load: {load_error}"
    hits = sum(1 for c in unit if c.replacements >= 1)
    parts = [f"{hits}/{len(unit)} search function(s) replaced by the group"]
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
    if model is not None:
        parts.append(f"{model.model}: {model.replacements} replacement(s)"
                     + (f" — mismatch type {model.mismatch_type}" if model.mismatch_type else "")
                     + (f" — error: {model.error}" if model.error else ""))
    return "; ".join(parts)


def select_groups(target, group: str | None, all_groups: bool, model: str | None, op: str | None) -> list:
    """The groups to verify: all, the named one, or the model/op pair's own <Model><Op>PatternGroup."""
    if all_groups:
        return list(target.groups)
    if group:
        return [target.group(group)]
    if model and op:
        from sdcompile.core.target.naming import registration_names

        names = registration_names(model, op)
        try:
            return [target.group(names.group)]
        except BadInput as exc:
            raise BadInput(
                f"no pattern group {names.group} (derived from --model {model} --op {op}) in {target.tree.root}",
                f"scaffold and register it first, or pass --group for an existing group ({exc.fix})",
            ) from exc
    raise BadInput("nothing to verify", "pass --group NAME, --all-groups, or --model and --op")


def _pair_model_word(model: str | None, model_file: str | None) -> str | None:
    """The model word of the pair's group name: the zoo's short name (`FluxTransformer2DModel` -> flux)."""
    if model_file or not model:
        return model
    try:
        from sdcompile.core.zoo.models import resolve_model

        return resolve_model(model).name
    except BadInput:
        return model


def run_verify(
    repo: Path | str | None = None,
    workdir: Path | str | None = None,
    group: str | None = None,
    all_groups: bool = False,
    model: str | None = None,
    model_file: str | None = None,
    op: str | None = None,
    dtype: str | None = None,
    min_cosine: float = DEFAULT_MIN_COSINE,
    plain_cpu: bool = False,
    progress: Progress | None = None,
    built_model=None,
) -> VerifyReport:
    """Everything `sdcompile verify` does; see the module docstring. `built_model` (a zoo BuiltModel) is used
    instead of building `model`/`model_file` again, for callers that already hold one."""
    from sdcompile.core.npu.device import activate_for_command

    if not 0.0 < min_cosine <= 1.0:
        raise BadInput(f"--min-cosine {min_cosine} is outside (0, 1]", "use e.g. 0.999")
    if not (group or all_groups or ((model or model_file) and op)):
        raise BadInput("nothing to verify", "pass --group NAME, --all-groups, or --model and --op")
    device = activate_for_command(plain_cpu)  # before anything imports diffusers

    from sdcompile.core.target.discovery import find_target
    from sdcompile.core.target.loader import load_target
    from sdcompile.workspace.store import Workspace
    say = progress or (lambda _msg: None)
    tree = find_target(repo)
    say(f"loading {tree.root} under {device.label}")
    target = load_target(tree)
    groups = select_groups(target, group, all_groups, _pair_model_word(model, model_file), op)
    model_label = model_file or model
    if built_model is None and model_label:
        say(f"building {model_label}")
        built_model = build_model(model, model_file, dtype)
    if built_model is not None:
        model_label = built_model.name

    ws = Workspace(workdir)
    pair = (model_label, op) if model_label and op else None
    report_dir = (ws.pair_dir(*pair) / "verify") if pair else ws.root / "_verify" / _safe(
        "all-groups" if all_groups else groups[0].group)
    results = []
    for g in groups:
        say(f"{g.group}")
        if not g.loaded:
            results.append(GroupResult(g.group, g.flag, g.position, g.module, g.error, (), None, False, False,
                                       _group_summary((), None, g.error)))
            continue
        group_dir = report_dir / _safe(g.group) if len(groups) > 1 else report_dir
        unit = tuple(run_unit_case(target, g, cls, min_cosine, group_dir) for cls in target.pattern_classes(g.group))
        unit_passed = bool(unit) and all(c.passed for c in unit)
        model_level = None
        if built_model is not None:
            say(f"{g.group} on {built_model.name}")
            model_level = run_model_level(target, g, built_model, any(c.replacements for c in unit),
                                          min_cosine, group_dir, classify_type7=not all_groups)
        if model_level is not None and pair:
            found = analyzed_sites(ws, *pair)
            replaced = {site.module_path for site in model_level.sites}
            missing = tuple(p for p in found if not any(r == p or r.startswith(p + ".") for r in replaced))
            model_level = dataclasses.replace(model_level, analyzed_sites=found, unreplaced_sites=missing)
        passed = unit_passed and (model_level is None or all_groups or model_level.passed)
        results.append(GroupResult(g.group, g.flag, g.position, g.module, None, unit, model_level, unit_passed,
                                   passed, _group_summary(unit, model_level, None)))

    notes = []
    if device.mode == "plain-cpu":
        notes.append("--plain-cpu: diffusers traced the model as a process without torch_npu does; the target's "
                     "fused ops still run on sdcompile's CPU kernels")
    if all_groups and built_model is not None:
        notes.append("--all-groups with a model: model-level counts are shown for every group; the gate is each "
                     "group's self-consistency (groups are written for different models)")
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
    _write_report(ws, report, report_dir)
    return report


def _write_report(ws, report: VerifyReport, report_dir: Path) -> None:
    from sdcompile.phases.verify.render import markdown_report
    from sdcompile.workspace.artifacts import write_artifact

    json_path = write_artifact("verify", report_dir / "verify.json", report)
    md_path = _write(report_dir / "verify.md", markdown_report(report))
    if report.pair:
        model, op = report.pair
        verdict = "pass" if report.passed else "fail"
        ws.record(model, op, "verify", verdict, "; ".join(g.summary for g in report.groups)[:500],
                  device=report.device, evidence=[json_path, md_path])


__all__ = [
    "Divergence", "GraphCheck", "GroupResult", "ModelLevel", "ModelSite", "PatternModuleStatus", "UnitCase",
    "VerifyReport", "build_model", "diagnose", "run_model_level", "run_unit_case", "run_verify", "select_groups",
]
