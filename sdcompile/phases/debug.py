"""Phase 5, `sdcompile debug`: the graph the pattern pass really sees, aligned node by node with each pattern as
the matcher registered it, at every candidate site; the first mismatch, its catalog type (1-7) and the fix.

1. Graph breaks first (`torch._dynamo.explain`): a pattern never matches across one.
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

import copy
import platform
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sdcompile.errors import BadInput

Progress = Callable[[str], None]
RNE_NAME = "the target's ReduandantNodeEliminationPass"
STAGE_CHOICES = ("before-freezing", "after-freezing")


# ------------------------------------------------------------------------------------------------ results
@dataclass(frozen=True)
class NodeView:
    name: str
    op: str  # "aten.mul.Tensor", "placeholder", "get_attr _frozen_param3", "literal"
    text: str  # "mul_1: bf16[2, 8, 64] = aten.mul.Tensor(mul, arg0_1)"
    source: str  # "diffusers/models/normalization.py:556 in forward: hidden_states = ..." ("" when not kept)
    holds: str | None = None  # placeholder / get_attr of the model: what it holds ("parameter norm.weight")


@dataclass(frozen=True)
class PairView:
    status: str  # "match" | "input" | "differs" | "extra in model" | "missing in model"
    field: str | None  # target | argument | constant | dtype | shape | users | node kind
    pattern: NodeView | None
    model: NodeView | None
    detail: str


@dataclass(frozen=True)
class FirstMismatch:
    stage: str  # "structure" (first match) or "exact" (register_replacement's re-trace with real values)
    field: str
    kind: str
    detail: str
    pattern: NodeView | None
    model: NodeView | None


@dataclass(frozen=True)
class MismatchVerdict:
    type: int
    name: str
    cause: str
    path: str  # "A" (edit the pattern) or "B" (custom graph pass)
    fix: str
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class PatternAtSite:
    pattern: str
    verdict: str  # "replaced" | "accepted" (torch accepts, the pass applied another) | "mismatch" | "error"
    start: str | None  # the model node the pattern's output was aligned with
    matched: int  # pattern ops lined up before/around the differences
    total: int
    torch_says: str  # torch's own matcher at `start`
    first: FirstMismatch | None
    other_differences: tuple[str, ...]
    mismatch: MismatchVerdict | None
    pairs: tuple[PairView, ...]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class GroupAtSite:
    group: str
    verdict: str  # "matches" | "mismatch" | "already fused"
    replaced_by: dict[str, int]  # pattern -> replacements the pass made inside this site
    mismatch_type: int | None
    summary: str
    closest: str | None  # the pattern whose alignment is shown (the one that lines up most)
    patterns: tuple[PatternAtSite, ...]


@dataclass(frozen=True)
class SiteResult:
    id: str  # "S1"
    subject: str  # the model, or "unit <pattern>" for a group's own search function
    label: str
    graph: int
    found_by: tuple[str, ...]
    nodes: int
    source: str
    fused_ops: tuple[str, ...]
    verdict: str  # "matches" | "mismatch" | "already fused"
    groups: tuple[GroupAtSite, ...]


@dataclass(frozen=True)
class PatternInfo:
    name: str
    source_file: str
    traced_with: str  # the trace function and decomposition table register_replacement used
    decompositions: int
    same_as_registered: bool | None  # the re-trace's PatternExpr equals the registered one
    anchor: tuple[str, ...]  # the op(s) the matcher starts from (the pattern's output)
    printed: str  # PatternPrettyPrinter of the registered pattern
    graph: str  # the search graph, with the pattern's source lines
    error: str | None = None


@dataclass(frozen=True)
class GroupInfo:
    group: str
    flag: str | None
    position: int | None
    source: str  # "mindiesd/compilation/patterns/wan_rmsnorm_pattern.py" or the --pattern-file
    error: str | None
    patterns: tuple[PatternInfo, ...]
    unit_hits: int  # replacements of the group's own search functions at the stage
    unit_by_pattern: dict[str, int]
    model_hits: int | None  # replacements in the model at the stage (None: no model)
    model_by_pattern: dict[str, int]
    outside_sites: tuple[str, ...]  # replacements that landed outside every candidate site
    silent_miss: bool  # the unit test hits, the model has none (mismatch type 7)


@dataclass(frozen=True)
class GraphBreaks:
    graphs: int
    breaks: int
    reasons: tuple[str, ...]
    note: str


@dataclass(frozen=True)
class RegistryRun:
    """The model with every group the backend enables by default, in registration order (--registry-order)."""

    groups: tuple[str, ...]  # in the order they were registered
    replacements: dict[str, int]  # group -> replacements in the model
    conflicts: int  # (site, group) pairs where a group that matches alone loses the site to an earlier group
    note: str


@dataclass(frozen=True)
class DebugResult:
    model: str  # the model, or "unit" (each group against its own search functions)
    label: str
    dtype: str
    device: str
    device_reason: str
    torch_version: str
    diffusers_version: str | None
    python: str
    target: str
    target_version: str
    target_package: str
    op: str
    stage: str  # "before_freezing" | "after_freezing"
    stage_note: str
    prepare_freezing: bool
    graph_breaks: GraphBreaks | None
    groups: tuple[GroupInfo, ...]
    registry_run: RegistryRun | None
    sites: tuple[SiteResult, ...]
    mismatched_sites: int
    passed: bool  # every site matches (or already calls the fused op)
    verdict: str  # one line
    notes: tuple[str, ...]
    report_dir: str
    dumps: tuple[str, ...]
    seconds: float


# ------------------------------------------------------------------------------------------------ subjects
@dataclass
class _Subject:
    """A module compiled once and captured at every stage: the model, or one pattern's search function."""

    name: str
    capture: Any  # graph.capture.GraphCapture
    stages: list  # StageGraph of the debugged stage, one per captured graph
    sites: list = field(default_factory=list)  # CandidateSite
    unit_of: str | None = None  # the pattern name, for a unit subject
    _origins: dict = field(default_factory=dict)

    def origins(self, stage) -> dict:
        """What each placeholder / get_attr of `stage` holds; constants freeze() folded are traced back to the
        module tensors and ops they were computed from (in the graph before freezing)."""
        key = id(stage)
        if key not in self._origins:
            self._origins[key] = _traced_origins(self.capture, stage)
        return self._origins[key]


def _traced_origins(capture, stage) -> dict:
    from sdcompile.graph.capture import STAGE_BEFORE_FREEZING, TensorOrigin
    from sdcompile.graph.nodes import op_name

    origins = dict(stage.origins)
    graph = next((g for g in capture.graphs if g.index == stage.graph_index), None)
    before = graph.stages.get(STAGE_BEFORE_FREEZING) if graph is not None else None
    if before is None or before is stage:
        return origins
    for name, origin in stage.origins.items():
        if origin.kind != "folded constant":
            continue
        try:
            node = before.node(name)
        except KeyError:
            continue
        ops, tensors, seen, todo = Counter(), [], set(), [node]
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            if current.op == "call_function":
                ops[op_name(current)] += 1
                todo.extend(current.all_input_nodes)
            elif current.op in ("placeholder", "get_attr"):
                held = before.origins.get(current.name)
                tensors.append(held.describe() if held is not None else current.name)
        if tensors:
            steps = ", ".join(f"{op} ×{n}" if n > 1 else op for op, n in ops.items()) or "no op"
            origins[name] = TensorOrigin("folded constant",
                                         f"{origin.name} = {steps} of {', '.join(sorted(set(tensors)))}")
    return origins


class _SearchFunction:
    @staticmethod
    def build(fn):
        import torch

        class SearchFunction(torch.nn.Module):
            """forward is the pattern's own search function, as upstream's unit tests write their models."""

            def forward(self, inputs):
                return fn(*inputs)

        return SearchFunction()


_UNIT_CAPTURES: dict[tuple, Any] = {}  # (tree, pattern, prepare_freezing) -> GraphCapture, per process


def _unit_capture(target, pattern_cls, rne, device):
    """The pattern's search function compiled like the model (cached per process: it depends on nothing else)."""
    import torch

    from sdcompile.graph.capture import capture_graphs
    from sdcompile.phases.verify_checks import example_inputs

    key = (str(target.tree.root), pattern_cls.name(), device.mode)
    if key not in _UNIT_CAPTURES:
        values, _specs = example_inputs(pattern_cls)
        values = [v.to(device.tensor_device) if isinstance(v, torch.Tensor) else v for v in values]
        module = _SearchFunction.build(pattern_cls.pattern)
        _UNIT_CAPTURES[key] = capture_graphs(
            module, {"inputs": tuple(values)}, model=f"unit {pattern_cls.name()}", dtype="", device=device.label,
            redundant_node_elimination=rne, redundant_node_elimination_name=RNE_NAME)
    return _UNIT_CAPTURES[key]


# ------------------------------------------------------------------------------------------------ groups
@dataclass
class _Group:
    name: str
    flag: str | None
    position: int | None
    source: str
    classes: list  # PatternBase classes
    registered: bool  # a group of the target (else classes from --pattern-file)
    error: str | None = None


def _replacement_fused_ops(pattern_cls) -> set[str]:
    from torch.fx.experimental.proxy_tensor import make_fx

    from sdcompile.target.loader import emulated_fused_op_targets, target_name

    try:
        gm = make_fx(pattern_cls.replacement, tracing_mode="fake")(*pattern_cls.inputs())
    except Exception:  # noqa: BLE001 - a replacement that does not trace alone belongs to no op
        return set()
    fused = emulated_fused_op_targets()
    return {target_name(n.target) for n in gm.graph.nodes if n.op == "call_function"} & set(fused)


def _group_op(group: _Group) -> str | None:
    from sdcompile.graph.candidates import op_of_fused

    fused = set()
    for cls in group.classes:
        fused |= _replacement_fused_ops(cls)
    return op_of_fused(fused)


def _target_group(target, name: str) -> _Group:
    g = target.group(name)
    source = f"mindiesd/compilation/patterns/{g.module}.py" if g.module else ""
    classes = target.pattern_classes(g.group) if g.loaded else []
    return _Group(g.group, g.flag, g.position, source, classes, True, g.error)


def _pattern_file_group(target, path: Path) -> _Group:
    """PatternBase classes of a pattern file, imported inside the target's patterns package (relative imports
    such as `from ..passes.register_pattern_to_pass import PatternBase` resolve as they would in the tree)."""
    import importlib.util

    from sdcompile.target.loader import PACKAGE, describe_error

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
    base = sys.modules[f"{PACKAGE}.compilation.passes.register_pattern_to_pass"].PatternBase
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
    return _Group(path.stem, None, None, str(path), classes, False)


def select_groups(target, op: str | None, groups: tuple[str, ...], pattern_file: Path | None) -> list[_Group]:
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
        if _group_op(group) == op:
            found.append(group)
    if not found:
        raise BadInput(f"no pattern group of the target replaces {op}", "pass --group NAME or --pattern-file F")
    return found


# ------------------------------------------------------------------------------------------------ views
def _node_view(node, origins=None) -> NodeView | None:
    from sdcompile.graph.align import _is_node
    from sdcompile.graph.mismatch import source_line
    from sdcompile.graph.nodes import format_node, op_name

    if node is None:
        return None
    if not _is_node(node):
        return NodeView(repr(node), "literal", repr(node), "")
    holds = None
    if origins is not None and node.op in ("placeholder", "get_attr"):
        origin = origins.get(node.name)
        holds = origin.describe() if origin is not None else None
    elif origins is None and node.op == "placeholder":
        holds = f"pattern input {node.target}"
    return NodeView(node.name, op_name(node), format_node(node), source_line(node), holds)


def _pair_views(alignment, origins) -> tuple[PairView, ...]:
    return tuple(PairView(p.status, p.field, _node_view(p.pattern), _node_view(p.model, origins), p.detail)
                 for p in alignment.pairs)


def _torch_verdict(entry, start) -> tuple[str, bool | None]:
    """torch's own matcher on `start`: its FailedMatch text, or whether the re-trace check accepts the match."""
    from torch._inductor import pattern_matcher as pm

    from sdcompile.target.loader import describe_error

    fns = getattr(entry.pattern, "fns", None)
    if fns is not None and start.target not in fns:
        return (f"never starts here: the pattern's output op is {entry.pattern.fns_repr()}, the node is "
                f"{start.target}"), False
    try:
        match = entry.pattern.match(start)
    except Exception as exc:  # noqa: BLE001 - the matcher can throw on odd graphs
        return f"the matcher raised {describe_error(exc)}", None
    if not pm.is_match(match):
        return f"rejects: {' '.join(str(match).split())[:300]}", False
    try:
        accepted = bool(entry.extra_check(match))
    except Exception as exc:  # noqa: BLE001
        return f"structure matches; the re-trace check raised {describe_error(exc)}", None
    if accepted:
        return "accepts (structure and the exact re-trace)", True
    return "rejects: the structure matches, register_replacement's re-trace with the real values does not", False


# ------------------------------------------------------------------------------------------------ one site
def _align_pattern(pattern, site, origins, replaced: int, ctx_base: dict) -> PatternAtSite:
    """Align one registered pattern at one site; classify the first difference."""
    from sdcompile.graph import align as A
    from sdcompile.graph import mismatch as M
    from sdcompile.graph.pattern_graph import decomposed_form, equivalence, retrace_exact

    starts = site.starts()
    equivalent = pattern.__dict__.setdefault("_equivalent", equivalence(pattern))
    structure = A.best_alignment(pattern.gm, starts, pattern.argnames, equivalent, frozenset(site.nodes))
    if structure is None:
        return PatternAtSite(pattern.name, "mismatch", None, 0, 0, "no node to start from", None, (), None, ())
    alignment, notes = structure, []
    if structure.clean:
        try:
            specific = retrace_exact(pattern, structure.bindings)
        except Exception as exc:  # noqa: BLE001 - the re-trace fails like register_replacement's check would
            specific = None
            notes.append(f"re-tracing the search function with the matched values failed: {exc}")
        if specific is not None:
            exact = A.align(specific, structure.start, exact=True, argnames=pattern.argnames, equivalent=equivalent)
            if not exact.clean:
                alignment = exact
    torch_says, accepted = (_torch_verdict(pattern.entry, structure.start) if pattern.entry is not None
                            else ("no registered entry", None))
    placeholders = [n for n in pattern.gm.graph.nodes if n.op == "placeholder"]
    input_names = {p: pattern.argnames[i] if i < len(pattern.argnames) else str(p.target)
                   for i, p in enumerate(placeholders)}
    frozen_inputs = {k: v for k, v in structure.bindings.items() if A._is_node(v) and v.op == "get_attr"}
    for name, node in frozen_inputs.items():
        notes.append(f"pattern input {name} binds get_attr {node.target} ({_holds(origins, node)}): torch's matcher "
                     "binds a pattern input to any node, a frozen constant included")
    first, verdict_obj = alignment.first, None
    if first is not None:
        decomposed = decomposed_form(first.model, pattern) if first.field == A.TARGET and A._is_op(first.model) \
            and first.pattern is not None else None
        ctx = M.Context(input_names=input_names, bindings=structure.bindings, decomposed=decomposed,
                        matched=alignment.matched, pattern_output=pattern.output_node,
                        decompositions=pattern.decomposition_source.split(" (")[0],
                        torch_message=None if accepted else torch_says, origins=origins, **ctx_base)
        c = M.classify(first, ctx)
        evidence = c.evidence
        if c.cause == "decomposition":
            evidence += (_backend_table_check(pattern, site),)
        verdict_obj = MismatchVerdict(c.type, c.name, c.cause, c.path, c.fix, evidence)
    elif accepted is False and frozen_inputs:
        name, node = next(iter(frozen_inputs.items()))
        ctx = M.Context(origins=origins, torch_message=torch_says, **ctx_base)
        c = M.classify_accepted_constant(ctx, name, node)
        verdict_obj = MismatchVerdict(c.type, c.name, c.cause, c.path, c.fix, c.evidence)
    if replaced:
        verdict = "replaced"
        if first is not None:
            notes.append("the pass replaced here although the alignment found a difference; trust the replacement")
    elif first is None and accepted:
        verdict = "accepted"
        notes.append("torch's matcher accepts this node; the pass applied another pattern here first (an earlier "
                     "variant of the group) or a guard of the pass (mutation region, CPU input) skipped it")
    elif first is None and accepted is False and verdict_obj is None:
        verdict = "mismatch"
        notes.append("sdcompile's alignment finds no difference, torch's matcher rejects: see its message")
    else:
        verdict = "mismatch" if first is not None or verdict_obj is not None else "accepted"
    first_view = None
    if first is not None:
        # a node present on one side only faces the node on the other side that takes its input directly
        pattern_side = first.pattern if first.pattern is not None else first.pattern_user
        model_side = first.model if first.model is not None else first.model_user
        first_view = FirstMismatch(first.stage, first.field, first.kind, first.detail,
                                   _node_view(pattern_side), _node_view(model_side, origins))
    others = tuple(d.detail for d in alignment.differences[1:6])
    return PatternAtSite(pattern.name, verdict, structure.start.name, alignment.matched, alignment.total, torch_says,
                         first_view, others, verdict_obj, _pair_views(alignment, origins), tuple(notes))


def _backend_table_check(pattern, site) -> str:
    """Register the pattern again with the backend's own decomposition table and say whether it then replaces
    this site: the decomposition fix, tried on a copy."""
    from sdcompile.graph.pattern_graph import replaced_with_table
    from sdcompile.target.loader import PACKAGE, describe_error

    module = sys.modules.get(f"{PACKAGE}.compilation._custom_decomposition")
    table_fn = getattr(module, "select_custom_decomp_table", None) if module is not None else None
    name = "the target's select_custom_decomp_table" if table_fn is not None else "an empty table"
    table_fn = table_fn or dict
    cache = pattern.__dict__.setdefault("_backend_table", {})
    key = id(site.stage)
    if key not in cache:
        try:
            cache[key] = replaced_with_table(pattern, site.stage.gm, table_fn)
        except Exception as exc:  # noqa: BLE001 - the check is evidence, not the verdict
            cache[key] = f"could not run: {describe_error(exc)}"
    removed = cache[key]
    if isinstance(removed, str):
        return f"checked with {name}: {removed}"
    here = {n.name for n in site.starts()} & removed
    if here:
        return f"checked: registered with {name} ({len(table_fn())} entries), this pattern replaces this site"
    return (f"checked: registered with {name} ({len(table_fn())} entries), this pattern still does not replace "
            "this site: the table is not the only difference here")


def _holds(origins, node) -> str:
    origin = origins.get(node.name)
    return origin.describe() if origin is not None else "a constant"


def _group_at_site(group: _Group, patterns: list, site, origins, replaced: Counter, ctx_base: dict) -> GroupAtSite:
    from sdcompile.graph.nodes import op_name

    if site.fused:
        fused = ", ".join(sorted({op_name(n) for n in site.fused}))
        return GroupAtSite(group.name, "already fused", {}, None,
                           f"the model already calls {fused} here: nothing for a pattern to replace", None, ())
    results = tuple(_align_pattern(p, site, origins, replaced.get(p.name, 0), ctx_base) for p in patterns)
    hits = {k: v for k, v in replaced.items() if v}
    if hits:
        names = ", ".join(f"{k} ×{v}" for k, v in hits.items())
        shown = next((r for r in results if r.pattern in hits), results[0] if results else None)
        return GroupAtSite(group.name, "matches", hits, None, f"replaced by {names}", shown.pattern if shown else None,
                           results)
    if not results:
        return GroupAtSite(group.name, "mismatch", {}, None, "the group registered no pattern", None, ())
    # closest: a classified difference, then one found only at the exact re-trace (the structure lined up),
    # then the largest share of the pattern lined up
    closest = max(results, key=lambda r: (r.mismatch is not None, r.first is not None and r.first.stage == "exact",
                                          r.matched / max(r.total, 1), -len(r.other_differences)))
    if closest.mismatch is not None:
        summary = f"type {closest.mismatch.type} ({closest.mismatch.name}): {closest.mismatch.fix}"
    elif closest.first is not None:
        summary = closest.first.detail
    else:
        summary = closest.torch_says
    return GroupAtSite(group.name, "mismatch", {}, closest.mismatch.type if closest.mismatch else None, summary,
                       closest.pattern, results)


# ------------------------------------------------------------------------------------------------ the phase
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
) -> DebugResult:
    """Everything `sdcompile debug` does; see the module docstring. `registry_order` also runs every group the
    backend enables by default, in registration order, to find ordering conflicts (type 5)."""
    from sdcompile.graph.candidates import known_ops, op_anchors

    started = time.perf_counter()
    if stage not in STAGE_CHOICES:
        raise BadInput(f"unknown stage {stage!r}", f"use one of {', '.join(STAGE_CHOICES)}")
    if op is not None and op not in known_ops():
        raise BadInput(f"unknown op {op!r}", f"use one of {', '.join(known_ops())}")
    if model and model_file:
        raise BadInput("both --model and --model-file were given", "pass one of them")
    if not op and not groups and not pattern_file:
        raise BadInput("nothing to debug", "pass --op (every group of that op), --group NAME or --pattern-file F")
    say = progress or (lambda _text: None)

    from sdcompile.npu.device import activate_for_command

    device = activate_for_command(plain_cpu)  # before anything imports diffusers
    import torch

    from sdcompile.graph.capture import STAGE_AFTER_FREEZING, STAGE_BEFORE_FREEZING
    from sdcompile.target.discovery import find_target
    from sdcompile.target.loader import load_target
    from sdcompile.workspace.store import Workspace, safe_name

    stage_name = STAGE_BEFORE_FREEZING if stage == "before-freezing" else STAGE_AFTER_FREEZING
    tree = find_target(repo)
    say(f"loading {tree.root} under {device.label}")
    target = load_target(tree)
    selected = select_groups(target, op, tuple(groups), Path(pattern_file) if pattern_file else None)
    has_model = bool(model or model_file)
    if op is None:
        ops = sorted({o for o in (_group_op(g) for g in selected) if o})
        if has_model and len(ops) != 1:
            names = ", ".join(g.name for g in selected)
            raise BadInput(f"cannot tell which op {names} replace (found: {', '.join(ops) or 'none'})",
                           f"pass --op ({', '.join(known_ops())})")
        op = "+".join(ops) or "unknown"
    anchors = op_anchors(op) if has_model else None
    title = anchors.title if anchors else op
    rne = sys.modules["mindiesd.compilation.passes.redundant_node_elimination_pass"].ReduandantNodeEliminationPass()

    # -- the model (or, with no model, each group's own search functions)
    subjects: list[_Subject] = []
    built, breaks, located, notes = None, None, (), []
    if has_model:
        from sdcompile.zoo.models import build_model, resolve_model

        spec = resolve_model(model, model_file)
        say(f"building {spec.name} ({dtype})")
        built = build_model(spec, dtype)
        say("graph breaks (torch._dynamo.explain)")
        breaks = _graph_breaks(built.module, built.inputs)
        say("compiling as MindieSDBackend does (dynamo, AOT, redundant-node elimination, freeze)")
        from sdcompile.graph.capture import capture_graphs

        capture = capture_graphs(built.module, built.inputs, model=built.name, dtype=built.dtype_name,
                                 device=device.label, redundant_node_elimination=rne,
                                 redundant_node_elimination_name=RNE_NAME)
        located, note = _locate(built, op)
        if note:
            notes.append(note)
        subject = _Subject(built.name, capture, capture.stage(stage_name))
        subjects.append(subject)
    unit_subjects: dict[str, _Subject] = {}
    for group in selected:
        for cls in group.classes:
            say(f"unit: {cls.name()}")
            try:
                cap = _unit_capture(target, cls, rne, device)
            except Exception as exc:  # noqa: BLE001 - a search function that does not compile is reported
                from sdcompile.target.loader import describe_error

                group.error = group.error or f"{cls.name()}: the search function does not compile: " \
                                             f"{describe_error(exc, tree.root)}"
                continue
            unit_subjects[cls.name()] = _Subject(f"unit {cls.name()}", cap, cap.stage(stage_name), unit_of=cls.name())

    from sdcompile.graph.candidates import candidate_sites, whole_graph_site

    if built is not None:
        subjects[0].sites = candidate_sites(subjects[0].stages, anchors, located)
    else:
        for s in unit_subjects.values():
            s.sites = [whole_graph_site(st, f"the search function of {s.unit_of}") for st in s.stages]
            subjects.append(s)

    # -- per group: register, trace patterns, apply the pass, align at every site
    ws = Workspace(workdir)
    if built is not None:
        report_dir = ws.pair_dir(built.name, op) / "debug"
    else:
        report_dir = ws.root / "_debug" / safe_name("+".join(g.name for g in selected))
    group_infos, per_site = [], {}  # (subject, site index) -> list[GroupAtSite]
    after_pass_texts: dict[str, str] = {}
    for group in selected:
        say(f"{group.name}: registering and matching")
        info = _run_group(target, group, subjects, unit_subjects, built is not None, stage_name, per_site,
                          after_pass_texts)
        group_infos.append(info)
    registry = None
    if registry_order and built is not None:
        say("every default-enabled group, in registration order")
        registry = _registry_order(target, selected, subjects[0], per_site, stage_name)

    sites = []
    counter = 0
    for si, subject in enumerate(subjects):
        for ci, site in enumerate(subject.sites):
            counter += 1
            results = tuple(per_site.get((si, ci), ()))
            verdicts = {r.verdict for r in results}
            verdict = ("already fused" if "already fused" in verdicts else
                       "matches" if "matches" in verdicts else "mismatch")
            from sdcompile.graph.mismatch import source_line
            from sdcompile.graph.nodes import op_name

            anchor_nodes = [n for n in site.nodes if anchors and op_name(n) in anchors.anchors] or site.nodes
            sites.append(SiteResult(
                id=f"S{counter}", subject=subject.name, label=site.label, graph=site.graph_index,
                found_by=tuple(site.found_by), nodes=len(site.nodes),
                source=source_line(anchor_nodes[0]) if anchor_nodes else "",
                fused_ops=tuple(sorted({op_name(n) for n in site.fused})), verdict=verdict, groups=results,
            ))
    mismatched = sum(1 for s in sites if s.verdict == "mismatch")
    passed = bool(sites) and mismatched == 0
    if not sites:
        verdict_line = f"no {title} site found in {subjects[0].name if subjects else 'the graph'}"
    elif passed:
        verdict_line = f"every {title} site matches ({len(sites)} site(s))"
    else:
        types = Counter(g.mismatch_type for s in sites if s.verdict == "mismatch" for g in s.groups
                        if g.mismatch_type is not None)
        kinds = ", ".join(f"type {t} ×{n}" for t, n in sorted(types.items()))
        verdict_line = f"{mismatched} of {len(sites)} {title} site(s) match no group" + (
            f" ({kinds})" if kinds else "")

    stage_note = _stage_note(stage_name, subjects)
    dumps = _write_dumps(report_dir, subjects, built, group_infos, selected, after_pass_texts, stage_name)
    import diffusers

    result = DebugResult(
        model=built.name if built else "unit",
        label=built.label if built else "each group against its own search functions",
        dtype=built.dtype_name if built else "as each pattern's inputs()",
        device=device.label,
        device_reason=device.reason,
        torch_version=torch.__version__,
        diffusers_version=getattr(diffusers, "__version__", None),
        python=platform.python_version(),
        target=str(tree.root),
        target_version=tree.version,
        target_package=target.package_note,
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
        verdict=verdict_line,
        notes=tuple(notes),
        report_dir=str(report_dir),
        dumps=tuple(str(p) for p in dumps),
        seconds=round(time.perf_counter() - started, 3),
    )
    _write_result(ws, result, report_dir, built, op)
    return result


def _run_group(target, group: _Group, subjects, unit_subjects, has_model: bool, stage_name: str, per_site: dict,
               after_pass_texts: dict) -> GroupInfo:
    import torch

    from sdcompile.graph.pattern_graph import call_for, record_registrations, trace_registered
    from sdcompile.target.loader import PACKAGE, describe_error, pattern_anchor_targets

    rpp = sys.modules[f"{PACKAGE}.compilation.passes.register_pattern_to_pass"]
    pattern_infos, patterns = [], []
    unit_by_pattern: Counter = Counter()
    model_by_pattern: Counter = Counter()
    outside: list[str] = []
    error = group.error
    session_groups = [group.name] if group.registered and not group.error else []
    with torch.no_grad(), target.session(session_groups) as session:
        try:
            with record_registrations() as calls:
                session.activate()
                if not group.registered:
                    rpp.register_pattern_to_pass(list(group.classes))
        except Exception as exc:  # noqa: BLE001 - a pattern that fails to register is this group's answer
            error = error or f"registration failed: {describe_error(exc, target.tree.root)}"
        entries = session.pattern_entries()
        for cls in group.classes:
            name = cls.name()
            call = call_for(cls, calls)
            entry = (entries.get(name) or [None])[0]
            if call is None:
                reason = session.registration_errors.get(name, "register_replacement was not called for it")
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
                name=name, source_file=_short_source(pg.source_file, target.tree.root),
                traced_with=f"{trace_fn} with {pg.decomposition_source}", decompositions=pg.decompositions,
                same_as_registered=pg.same_as_registered,
                anchor=pattern_anchor_targets(entry.pattern) if entry is not None else (),
                printed=pg.printed(), graph=pg.readable(),
            ))

        # the pass, on a copy of each stage graph: the model's and the group's own search functions'
        own = {c.name() for c in group.classes}
        runs = [s for s in subjects if s.unit_of is None or s.unit_of in own]
        runs += [s for name, s in unit_subjects.items() if name in own and s not in runs]
        replaced_at: dict[tuple[int, int], Counter] = {}
        for subject in runs:
            for stage in subject.stages:
                before = len(session.applications)
                hits_before = Counter(session.hits_by_pattern)
                gm = torch.fx.GraphModule(stage.gm, copy.deepcopy(stage.gm.graph))
                try:
                    rpp.patterns(gm)
                except Exception as exc:  # noqa: BLE001 - a pattern can throw inside the matcher
                    error = error or f"the pass raised on {subject.name}: {describe_error(exc, target.tree.root)}"
                    continue
                gained = Counter(session.hits_by_pattern) - hits_before
                if subject.unit_of is None:
                    model_by_pattern.update(gained)
                    after_pass_texts[f"{group.name}.{stage.graph_index}"] = gm.print_readable(
                        print_output=False, include_stride=False, include_device=False, colored=False)
                else:
                    unit_by_pattern.update(gained)
                if subject in subjects:
                    _attribute(subjects.index(subject), subject, stage, session.applications[before:], replaced_at,
                               outside)
        model_hits = sum(model_by_pattern.values()) if has_model else None
        unit_hits = sum(unit_by_pattern.values())
        silent = bool(has_model and unit_hits and model_hits == 0)
        ctx_base = {"stage": stage_name, "group": group.name, "unit_hits": unit_hits,
                    "model_hits": model_hits if has_model else None}
        for subject in runs:
            if subject not in subjects:
                continue
            si = subjects.index(subject)
            for ci, site in enumerate(subject.sites):
                per_site.setdefault((si, ci), []).append(_group_at_site(
                    group, patterns, site, subject.origins(site.stage), replaced_at.get((si, ci), Counter()),
                    ctx_base))
    return GroupInfo(
        group=group.name, flag=group.flag, position=group.position, source=group.source, error=error,
        patterns=tuple(pattern_infos), unit_hits=unit_hits, unit_by_pattern=dict(unit_by_pattern),
        model_hits=model_hits, model_by_pattern=dict(model_by_pattern), outside_sites=tuple(outside),
        silent_miss=silent,
    )


def _registry_order(target, selected: list[_Group], subject: _Subject, per_site: dict, stage_name: str) -> RegistryRun:
    """Apply every default-enabled group at once, registered as the backend registers them (pattern_registry
    order; groups outside it and --pattern-file groups after), and mark each site a selected group matches
    alone but loses to a group registered earlier: the ordering form of mismatch type 5."""
    import dataclasses

    import torch

    from sdcompile.target.loader import PACKAGE

    config = sys.modules[f"{PACKAGE}.compilation.compiliation_config"].FusionPatterns
    defaults = {f.name for f in dataclasses.fields(config) if f.default is True}
    enabled = sorted((g for g in target.groups if g.loaded and g.flag in defaults), key=lambda g: g.position)
    names = [g.group for g in enabled]
    names += [g.name for g in selected if g.registered and not g.error and g.name not in names]
    files = [g for g in selected if not g.registered]
    owner = {p: g.group for g in target.groups if g.group in names for p in g.patterns}
    owner.update({cls.name(): g.name for g in files for cls in g.classes})
    rpp = sys.modules[f"{PACKAGE}.compilation.passes.register_pattern_to_pass"]
    replaced_at: dict[tuple[int, int], Counter] = {}
    totals: Counter = Counter()
    with torch.no_grad(), target.session(names) as session:
        session.activate()
        for g in files:
            rpp.register_pattern_to_pass(list(g.classes))
        for stage in subject.stages:
            before = len(session.applications)
            rpp.patterns(torch.fx.GraphModule(stage.gm, copy.deepcopy(stage.gm.graph)))
            applied = session.applications[before:]
            totals.update(owner.get(a.pattern, a.pattern) for a in applied)
            _attribute(0, subject, stage, applied, replaced_at, [])
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

    from sdcompile.graph.mismatch import mismatch_type

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


def _attribute(si: int, subject, stage, applied, replaced_at: dict, outside: list) -> None:
    """Credit each replacement to the candidate site holding its node (by name: the pass ran on a copy)."""
    for app in applied:
        home = next((ci for ci, site in enumerate(subject.sites)
                     if site.stage is stage and any(n.name == app.node for n in site.starts())), None)
        if home is None:
            where = f" in {app.module_path}" if app.module_path else ""
            outside.append(f"{app.pattern} at {app.node} ({app.target}){where} of {subject.name}")
            continue
        replaced_at.setdefault((si, home), Counter())[app.pattern] += 1


def _short_source(path: str, root: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path(root).resolve()))
    except ValueError:
        return path


def _graph_breaks(module, inputs) -> GraphBreaks:
    import torch
    import torch._dynamo

    torch._dynamo.reset()
    try:
        with torch.no_grad():
            explained = torch._dynamo.explain(module)(**inputs)
    except Exception as exc:  # noqa: BLE001 - explain is advisory; the capture still runs
        return GraphBreaks(0, 0, (), f"torch._dynamo.explain failed: {type(exc).__name__}: {exc}")
    finally:
        torch._dynamo.reset()
    reasons = []
    for reason in explained.break_reasons:
        where = ""
        stack = getattr(reason, "user_stack", None) or []
        if stack:
            frame = stack[-1]
            where = f" at {frame.filename.rsplit('site-packages/', 1)[-1]}:{frame.lineno}"
        reasons.append(f"{' '.join(str(reason.reason).split())[:240]}{where}")
    count = explained.graph_break_count
    note = ("no graph break: the model is one graph, so a pattern can match anywhere in it" if count == 0 else
            f"{count} graph break(s) split the model into {explained.graph_count} graphs: a pattern never matches "
            "across a break, so a site cut by one cannot be replaced")
    return GraphBreaks(explained.graph_count, count, tuple(reasons), note)


def _locate(built, op: str) -> tuple[tuple, str | None]:
    """Phase-1 sites: the implementations analyze's rules locate by running the model once."""
    try:
        from sdcompile.zoo.locate import locate
        from sdcompile.zoo.runtrace import trace_forward

        trace = trace_forward(built.module, built.inputs)
        return tuple(locate(trace, type(built.module), (op,)).get(op, ())), None
    except Exception as exc:  # noqa: BLE001 - anchors still find the sites
        return (), f"phase-1 location failed ({type(exc).__name__}: {exc}); candidate sites come from op anchors only"


def _stage_note(stage_name: str, subjects) -> str:
    from sdcompile.graph.capture import STAGE_AFTER_FREEZING

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
                f"graph_rewrite_after_freezing (where a custom graph pass runs). {tensors}")
    return ("before_freezing: the AOT graph after the target's redundant-node elimination, as the pattern pass in "
            "graph_rewrite_before_freezing receives it; replacement counts are what that pass does. " + tensors)


# ------------------------------------------------------------------------------------------------ writing
def _write_dumps(folder: Path, subjects, built, groups, selected, after_pass_texts, stage_name) -> list[Path]:
    import json

    from sdcompile.fsutil import atomic_write_text
    from sdcompile.graph.dump import stage_header

    written: list[Path] = []
    for subject in subjects:
        if subject.unit_of is not None:
            continue
        cap = subject.capture
        for stage in cap.metadata.stages:
            parts = [stage_header(cap, sg) + "\n" + sg.text for sg in cap.stage(stage)]
            path = folder / f"{stage}.{subject.name}.txt"
            atomic_write_text(path, "\n\n".join(parts))
            written.append(path)
    for key, text in after_pass_texts.items():
        group, index = key.rsplit(".", 1)
        name = f"after_patterns.{built.name}.{group}.txt" if index == "0" else \
            f"after_patterns.{built.name}.{group}.graph{index}.txt"
        path = folder / name
        atomic_write_text(path, f"# {stage_name} after {group}'s patterns (the target's PatternMatchPass on a copy)\n"
                          + text)
        written.append(path)
    for g in groups:
        for p in g.patterns:
            if p.error:
                continue
            path = folder / f"pattern.{p.name}.txt"
            atomic_write_text(path, (
                f"# {p.name} ({g.group}, {p.source_file})\n# traced with {p.traced_with}\n"
                f"# same PatternExpr as the registered entry: {p.same_as_registered}\n\n"
                f"## as registered (PatternPrettyPrinter)\n{p.printed}\n\n## the search graph\n{p.graph}\n"))
            written.append(path)
    meta = {
        "model": built.name if built else "unit",
        "stage": stage_name,
        "torch": _version("torch"), "diffusers": _version("diffusers"),
        "groups": [{"group": g.group, "flag": g.flag, "unit_hits": g.unit_hits, "model_hits": g.model_hits,
                    "model_by_pattern": g.model_by_pattern, "unit_by_pattern": g.unit_by_pattern} for g in groups],
    }
    if subjects:
        from dataclasses import asdict

        meta["capture"] = asdict(subjects[0].capture.metadata)
    path = folder / "metadata.json"
    atomic_write_text(path, json.dumps(meta, indent=2, default=str) + "\n")
    written.append(path)
    return written


def _version(dist: str) -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _write_result(ws, result: DebugResult, folder: Path, built, op: str) -> None:
    import json

    from sdcompile.fsutil import atomic_write_text
    from sdcompile.report.output import dumps

    path = folder / "debug.json"
    atomic_write_text(path, dumps(result) + "\n")
    meta_path = folder / "metadata.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    meta.update(device=result.device, target=result.target, target_version=result.target_version,
                target_package=result.target_package, python=result.python, verdict=result.verdict)
    atomic_write_text(meta_path, json.dumps(meta, indent=2, default=str) + "\n")
    if built is not None:
        ws.record(built.name, op, "debug", "pass" if result.passed else "fail", result.verdict, device=result.device,
                  evidence=[path, meta_path])


__all__ = [
    "DebugResult", "FirstMismatch", "GraphBreaks", "GroupAtSite", "GroupInfo", "MismatchVerdict", "NodeView",
    "PairView", "PatternAtSite", "PatternInfo", "STAGE_CHOICES", "SiteResult", "run_debug", "select_groups",
]
