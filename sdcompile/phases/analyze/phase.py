"""Phase 1, `sdcompile analyze`: find, extract and classify each primitive of a model.

1. Build the model (zoo or --model-file) on the active device (real NPU, emulated NPU, or plain CPU).
2. Run one recorded forward (`zoo.runtrace`) and locate each primitive's implementations and sites by what ran
   (`zoo.locate`, rules in catalogs/primitives.toml).
3. Compile the way MindieSDBackend does and keep the graphs (`graph.capture`): each site's ATen subgraph as the
   pattern pass sees it (before_freezing), and after freeze().
4. Per implementation: complete source with the lines that ran, where its tensors come from with graph
   evidence, the recipe's path decision (register_replacement vs custom graph pass, and at which stage), and the
   NPU note when diffusers itself calls a torch_npu fused op there.
5. Write analysis.json, snippets and graph dumps to the workspace and record phase 1 for each model/op pair.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from sdcompile.core.environment import Versions, collect_versions
from sdcompile.util.errors import BadInput

OP_CHOICES = ("rmsnorm", "rope", "adaln", "gelu", "all")
PATTERN_STAGE = "graph_rewrite_before_freezing"
AFTER_FREEZING_STAGE = "graph_rewrite_after_freezing"

Progress = Callable[[str], None]


@dataclass(frozen=True)
class SiteReport:
    path: str  # "transformer_blocks.0.attn.norm_q"; "" is the model itself
    module_class: str
    calls: int
    aten_nodes: int  # nodes of its subgraph in the before_freezing graph
    shared_graph: bool  # those nodes sit in a graph compiled from the code itself (graph break), shared by sites
    note: str  # why a site has no ATen nodes, when it has none
    npu_branch_taken: bool | None  # diffusers' own torch_npu branch ran here (None: no such branch)


class Holder(StrEnum):
    """What holds a module tensor in a captured stage; the path decision is taken on this, not on the text."""

    PLACEHOLDER = "placeholder"  # a graph input: a pattern input binds it
    GET_ATTR = "get_attr"  # a constant of the graph
    FOLDED = "folded"  # freeze() folded what it feeds into a new constant
    ABSENT = "absent"  # the capture worked and the tensor is in no graph (only values computed from it are)
    NOT_CAPTURED = "not captured"  # no graph: torch.compile failed, nothing can be checked


@dataclass(frozen=True)
class TensorSource:
    tensor: str  # "transformer_blocks.0.attn.norm_q.weight"
    kind: str  # "parameter" | "buffer" | "tensor attribute"
    read_by: str  # "RMSNorm.forward line 427" — who reads it; "child module <path>" for tensors of children
    before_freezing: str  # "placeholder arg28_1" | "get_attr ..." | "not in the graph" (for people)
    after_freezing: str
    before_holder: Holder = Holder.ABSENT  # what decisions read
    after_holder: Holder = Holder.ABSENT


@dataclass(frozen=True)
class PathDecision:
    parameter_source: str  # "module attribute" | "function input"
    path: str  # "register_replacement" | "custom graph pass"
    stage: str  # "graph_rewrite_before_freezing" | "graph_rewrite_after_freezing"
    recipe_rule: str  # what the recipe says for this parameter source
    why: str


@dataclass(frozen=True)
class NpuNote:
    fused_ops: tuple[str, ...]  # torch_npu ops the implementation calls itself ("npu_rms_norm")
    gate: str  # "is_torch_npu_available"
    condition: str  # the source line deciding the branch
    taken_at: int  # sites where the branch ran in this run
    of_sites: int
    text: str


@dataclass(frozen=True)
class ImplementationReport:
    name: str  # "torch.nn.RMSNorm", "embeddings.apply_rotary_emb", "transformer_flux.FluxTransformerBlock.forward
    #            (inline)"
    qualified_name: str
    kind: str  # "class" | "function" | "inline"
    scope: str  # "torch" | "diffusers (shared)" | "model-local" | "user code"
    matched_by: tuple[str, ...]
    form: str | None
    order: str | None  # AdaLN: "shift, scale" / "scale, shift" as its split hands them out
    source: str  # "diffusers/models/normalization.py:510-568"
    lines_run: str  # "541-543, 554-566"
    primitive_lines: str  # inline implementations: the lines computing the primitive ("476, 490")
    site_count: int
    sites: tuple[SiteReport, ...]
    tensors: tuple[TensorSource, ...]
    child_tensors: tuple[str, ...]  # module attributes read only by child modules (e.g. an AdaLN's linear)
    decision: PathDecision
    evidence: tuple[str, ...]
    npu_note: NpuNote | None
    snippet: str | None  # workspace-relative path of the source snippet
    subgraphs: str | None  # workspace-relative path of the ATen subgraphs file


@dataclass(frozen=True)
class OpReport:
    op: str
    title: str
    requested: bool  # named explicitly (not only through --op all)
    present: bool
    implementations: tuple[ImplementationReport, ...]
    site_count: int
    analysis: str | None  # workspace-relative analysis.json
    note: str | None


@dataclass(frozen=True)
class CaptureSummary:
    graphs: int
    stages: tuple[str, ...]
    prepare_freezing: bool
    parameters_before_freezing: str  # "62 placeholders, 0 get_attr"
    parameters_after_freezing: str
    note: str
    folder: str  # workspace-relative folder of the dumps
    redundant_node_elimination: str = ""  # whose pass made the before-freezing graph ("" when nothing compiled)


@dataclass(frozen=True)
class AnalyzeResult:
    model: str
    label: str
    model_class: str
    origin: str
    dtype: str
    device: str
    device_reason: str
    torch_version: str
    diffusers_version: str | None
    op: str
    ops: tuple[OpReport, ...]
    gate: str  # "pass" | "fail"
    missing: tuple[str, ...]  # explicitly requested ops that are absent
    capture: CaptureSummary
    workspace: str
    seconds: float
    timings: dict[str, float]
    versions: Versions  # torch, torch_npu (real or emulated), diffusers; analyze reads no MindIE-SD tree


def _ops_for(op: str) -> tuple[str, ...]:
    wanted = op.strip().lower()
    if wanted not in OP_CHOICES:
        raise BadInput(f"unknown op {op!r}", f"use one of {', '.join(OP_CHOICES)}")
    return OP_CHOICES[:-1] if wanted == "all" else (wanted,)


def analyze(
    model: str | None = None,
    model_file: str | None = None,
    op: str = "all",
    dtype: str = "bf16",
    plain_cpu: bool = False,
    workdir: Path | str | None = None,
    progress: Progress | None = None,
    repo: Path | str | None = None,
) -> AnalyzeResult:
    """Phase 1 on `model`/`model_file`. With `repo` (a MindIE-SD tree), the graphs are captured with the tree's own
    redundant-node pass and decomposition table, as its backend compiles; without, with sdcompile's equivalent
    pass (graph.redundant_nodes), said in the result."""
    from sdcompile.core.npu.device import activate_for_command
    from sdcompile.core.zoo.models import parse_dtype, resolve_model
    from sdcompile.workspace.store import Workspace

    ops = _ops_for(op)
    dtype = parse_dtype(dtype)
    spec = resolve_model(model, model_file)  # before anything heavy: a typo fails fast
    say = progress or (lambda _text: None)
    started = time.perf_counter()
    timings: dict[str, float] = {}

    device = activate_for_command(plain_cpu)  # before diffusers is imported
    tree, backend = _target_backend(repo, plain_cpu)
    say(f"building {spec.name} ({dtype}) on {device.label}")
    from sdcompile.core.graph.capture import capture_graphs
    from sdcompile.core.zoo.locate import locate
    from sdcompile.core.zoo.models import build_model
    from sdcompile.core.zoo.runtrace import trace_forward

    t = time.perf_counter()
    built = build_model(spec, dtype)
    timings["build"] = time.perf_counter() - t

    say("running one recorded forward")
    t = time.perf_counter()
    try:
        trace = trace_forward(built.module, built.inputs)
    except Exception as exc:  # the user's module or inputs, not sdcompile
        raise BadInput(
            f"{built.label}: one forward with its example inputs raised {type(exc).__name__}: {exc}",
            "check the model and the kwargs its factory returns (they are passed as module(**kwargs))",
        ) from exc
    located = locate(trace, type(built.module), ops)
    timings["locate"] = time.perf_counter() - t

    ws = Workspace(workdir)
    graphs_dir = ws.root / _safe(built.name) / "graphs"
    capture = None
    if any(located.values()):  # nothing located: no subgraph to show, so no compile to pay for
        say("compiling as MindieSDBackend does (dynamo, AOT, freeze)")
        t = time.perf_counter()
        try:
            capture = capture_graphs(built.module, built.inputs, model=built.name, dtype=dtype,
                                     device=device.label, **backend)
        except Exception as exc:  # dynamo/AOT/freeze cannot compile this model: report what ran, without graphs
            capture = _failed_capture(exc, built, dtype, device.label)
        timings["capture"] = time.perf_counter() - t

    say("extracting sources, subgraphs and parameter sources")
    t = time.perf_counter()
    if capture is not None:
        capture.dump(graphs_dir)
    summary = _capture_summary(capture, ws.relative(graphs_dir))
    reports = []
    for name in ops:
        reports.append(
            _op_report(name, op != "all", located[name], trace, capture, built, device, ws, summary)
        )
    timings["extract"] = time.perf_counter() - t

    missing = tuple(r.op for r in reports if r.requested and not r.present)
    result = AnalyzeResult(
        model=built.name,
        label=built.label,
        model_class=built.class_name,
        origin=spec.origin,
        dtype=dtype,
        device=device.label,
        device_reason=device.reason,
        torch_version=_torch_version(),
        diffusers_version=_version("diffusers"),
        op=op,
        ops=tuple(reports),
        gate="fail" if missing else "pass",
        missing=missing,
        capture=summary,
        workspace=str(ws.root),
        seconds=round(time.perf_counter() - started, 3),
        timings={k: round(v, 3) for k, v in timings.items()},
        versions=collect_versions(tree, device=device),
    )
    _write_and_record(result, ws, graphs_dir)
    return result


def _target_backend(repo: Path | str | None, plain_cpu: bool) -> tuple[object | None, dict]:
    """(the tree, capture_graphs keywords) for `repo`: its redundant-node pass and decomposition table, the code
    MindieSDBackend runs before its pattern pass. No repo: (None, {}), sdcompile's equivalent pass."""
    if repo is None:
        return None, {}
    if plain_cpu:
        raise BadInput("--plain-cpu and --repo together: the target's code runs under the emulated NPU",
                       "drop --plain-cpu to capture with the tree's passes, or drop --repo")
    from sdcompile.core.target.discovery import find_target
    from sdcompile.core.target.loader import load_target

    tree = find_target(Path(repo))
    target = load_target(tree)
    return tree, {"redundant_node_elimination": target.redundant_node_pass(),
                  "redundant_node_elimination_name": target.REDUNDANT_NODE_PASS_NAME,
                  "decompositions": target.decomposition_table()}


def _torch_version() -> str:
    import torch

    return torch.__version__


def _version(dist: str) -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _failed_capture(exc: Exception, built, dtype: str, device: str):
    """A capture with no graphs, whose metadata says why; every graph lookup then finds nothing."""
    import sys

    from sdcompile.core.graph.capture import CaptureMetadata, GraphCapture

    first_line = (str(exc).strip().splitlines() or [""])[0][:300]
    meta = CaptureMetadata(
        model=built.name, dtype=dtype, device=device, torch_version=_torch_version(),
        diffusers_version=_version("diffusers"), python_version=sys.version.split()[0],
        backend=f"torch.compile failed: {type(exc).__name__}: {first_line}", decompositions=0,
        redundant_node_elimination="", pattern_pass=None, prepare_freezing=True, cpu_weight_prepack=False,
        fullgraph=False, graph_count=0, stages=(), seconds=0.0,
    )
    return GraphCapture(metadata=meta, graphs=())


def _safe(name: str) -> str:
    from sdcompile.workspace.store import safe_name

    return safe_name(name)


# ----------------------------------------------------------------------------------------------- per op
def _op_report(op, requested, located, trace, capture, built, device, ws, summary) -> OpReport:
    from sdcompile.core.zoo.primitives import primitive_rules

    rules = primitive_rules()[op]
    pair = ws.pair_dir(built.name, op) if (located or requested) else None
    impls = tuple(_implementation(loc, trace, capture, built, device, ws, pair) for loc in located)
    if pair is not None:
        _prune_snippets(pair / "snippets", impls, ws)
    note = None
    if not located:
        note = (f"no {rules.title} ran in this model's forward: nothing matched the catalog's classes, functions, "
                f"op signatures{' or modulation forms' if rules.modulation else ''} (catalogs/primitives.toml)")
    return OpReport(
        op=op,
        title=rules.title,
        requested=requested,
        present=bool(located),
        implementations=impls,
        site_count=sum(i.site_count for i in impls),
        analysis=ws.relative(pair / "analysis.json") if pair is not None else None,
        note=note,
    )


def _implementation(loc, trace, capture, built, device, ws, pair) -> ImplementationReport:
    from sdcompile.core.graph.capture import STAGE_AFTER_FREEZING, STAGE_BEFORE_FREEZING
    from sdcompile.core.zoo.source import extract_source, line_ranges, render_snippet

    extract = extract_source(loc, trace.lines)
    code = loc.obj if loc.kind != "class" else None
    per_site: list[tuple[str, list, list]] = []  # (site, before_freezing subgraphs, after_freezing subgraphs)
    sites = []
    npu_sites = _npu_sites(loc, trace)
    npu = _npu_note(loc, extract, npu_sites, device)
    for site in loc.sites:
        before = _site_subgraphs(capture.stage(STAGE_BEFORE_FREEZING), loc, site.path, code)
        after = _site_subgraphs(capture.stage(STAGE_AFTER_FREEZING), loc, site.path, code)
        per_site.append((site.path, before, after))
        sites.append(SiteReport(
            path=site.path,
            module_class=site.module_class,
            calls=site.calls,
            aten_nodes=sum(len(s.nodes) for s in before),
            shared_graph=any(s.shared for s in before),
            note="" if before else _no_nodes_note(capture, loc, site.path, code),
            npu_branch_taken=(site.path in npu_sites) if npu is not None else None,
        ))

    tensors = _tensor_sources(loc, capture)
    child = _child_tensors(loc, trace)
    decision = _decide(tensors, capture)
    evidence = _evidence(loc, tensors, per_site, capture)

    snippet_rel = subgraph_rel = None
    if pair is not None:
        slug = _slug(loc.display_name)
        versions = f"diffusers {capture.metadata.diffusers_version}, torch {capture.metadata.torch_version}"
        if extract is not None:
            path = pair / "snippets" / f"{slug}.py"
            _write(path, render_snippet(loc, extract, versions, built.label))
            snippet_rel = ws.relative(path)
        path = pair / "snippets" / f"{slug}.aten.txt"
        _write(path, _render_subgraphs(loc, per_site, capture))
        subgraph_rel = ws.relative(path)

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
        child_tensors=child,
        decision=decision,
        evidence=evidence,
        npu_note=npu,
        snippet=snippet_rel,
        subgraphs=subgraph_rel,
    )


def _site_subgraphs(stages, loc, site: str, code) -> list:
    """The site's nodes in each graph; when module context finds none (the code ran in a graph dynamo compiled
    from the function itself after a graph break), the nodes of such shared graphs that run its code."""
    from sdcompile.core.graph.sites import code_nodes, is_detached, site_nodes, subgraph

    found = [subgraph(st, nodes) for st in stages if (nodes := site_nodes(st, loc.kind, site, code, loc.lines))]
    if found:
        return found
    return [subgraph(st, nodes, shared=True) for st in stages
            if is_detached(st) and (nodes := code_nodes(st, loc.codes, loc.lines))]


def _no_nodes_note(capture, loc, site: str, code) -> str:
    from sdcompile.core.graph.capture import STAGE_DYNAMO

    if not capture.graphs:
        return f"not captured: {capture.metadata.backend}"
    if _site_subgraphs(capture.stage(STAGE_DYNAMO), loc, site, code):
        return ("dead code: in the dynamo graph but not in the AOT graph — its result never reaches an output, "
                "so no pattern will ever see it")
    return "not in any captured graph: it ran outside compiled code"


# ------------------------------------------------------------------------------- parameters and the path
def _holder(capture, stage: str, tensor: str) -> tuple[Holder, str]:
    if not capture.graphs:
        return Holder.NOT_CAPTURED, "not captured"
    for st in capture.stage(stage):
        for name, origin in st.origins.items():
            if origin.name == tensor:
                node = st.node(name)
                if node.op == "placeholder":
                    return Holder.PLACEHOLDER, f"placeholder {name}"
                return Holder.GET_ATTR, f"get_attr {node.target} ({name})"
    return Holder.ABSENT, "not in the graph"


def _tensor_sources(loc, capture) -> tuple[TensorSource, ...]:
    from sdcompile.core.graph.capture import STAGE_AFTER_FREEZING, STAGE_BEFORE_FREEZING

    out = []
    for read in loc.reads:
        before_holder, before = _holder(capture, STAGE_BEFORE_FREEZING, read.tensor)
        after_holder, after = _holder(capture, STAGE_AFTER_FREEZING, read.tensor)
        if after_holder is Holder.ABSENT and before_holder is Holder.PLACEHOLDER:
            # freeze() constant-folded what it feeds (e.g. `table[None]`) into a new _frozen_param* constant
            after_holder = Holder.FOLDED
            after = "folded by freeze() into a constant derived from it (get_attr _frozen_param*)"
        out.append(TensorSource(read.tensor, read.kind, f"{read.by} line {read.line}", before, after,
                                before_holder, after_holder))
    return tuple(out)


def _child_tensors(loc, trace) -> tuple[str, ...]:
    if loc.kind != "class":
        return ()
    prefixes = tuple(f"{s.path}." for s in loc.sites if s.path)
    found = []
    for call in trace.calls:
        if call.site.startswith(prefixes):
            found.extend(t for t in call.tensors_read if t not in found)
    return tuple(found)


def _decide(tensors: tuple[TensorSource, ...], capture) -> PathDecision:
    torch_version = capture.metadata.torch_version
    if not tensors:
        return PathDecision(
            parameter_source="function input",
            path="register_replacement",
            stage=PATTERN_STAGE,
            recipe_rule="function input -> register_replacement (the pattern's inputs bind to graph values)",
            why="every tensor it uses arrives as an argument or an activation computed in the graph, so a "
            "register_replacement pattern whose inputs are those tensors matches in the pattern pass",
        )
    seed = ("nn.Module attribute -> custom graph pass in graph_rewrite_after_freezing (the recipe: self.weight is "
            "get_attr)")
    first = tensors[0]
    befores = {t.before_holder for t in tensors}
    if befores <= {Holder.PLACEHOLDER}:
        after = first.after_freezing
        why = (
            f"MindIE-SD's pattern pass runs in {PATTERN_STAGE} on the AOT graph, where {first.tensor} is "
            f"{first.before_freezing} (dynamo lifts module tensors into graph inputs on torch {torch_version}), "
            "so a register_replacement pattern taking it as an input matches there. "
        )
        if first.after_holder is Holder.FOLDED:
            why += (f"After freeze() it is {after}: part of the chain became a constant, so a pass placed after "
                    "freezing cannot match it with register_replacement (mismatch type 6) and needs a custom "
                    "graph pass.")
        elif first.after_holder is Holder.GET_ATTR:
            # torch's matcher binds a pattern input to any node, get_attr included (checked by debug's tests);
            # only folding inside the chain defeats it after freezing.
            why += (f"After freeze() it is {after}; torch's matcher binds a pattern input to a get_attr node "
                    "too, so even a pass placed after freezing would match it unless freeze() folds part of the "
                    "chain (mismatch type 6; `sdcompile debug --stage after-freezing` checks this model).")
        else:
            why += f"After freeze() it is still {after} in this capture."
        return PathDecision("module attribute", "register_replacement", PATTERN_STAGE, seed, why)
    if Holder.NOT_CAPTURED in befores:  # torch.compile failed, so the stage cannot be checked
        return PathDecision(
            "module attribute", "custom graph pass", AFTER_FREEZING_STAGE, seed,
            f"no graph was captured ({capture.metadata.backend}), so the stage the pass runs at cannot be "
            "checked; the recipe's rule applies",
        )
    if Holder.GET_ATTR in befores:
        holder = next(t for t in tensors if t.before_holder is Holder.GET_ATTR)
        return PathDecision(
            "module attribute", "custom graph pass", AFTER_FREEZING_STAGE, seed,
            f"{holder.tensor} is already {holder.before_freezing} in the graph the pattern pass sees, which a "
            "register_replacement pattern (inputs are placeholders) cannot bind: mismatch type 6",
        )
    return PathDecision(
        "module attribute", "register_replacement", PATTERN_STAGE, seed,
        f"{first.tensor} does not appear as a graph input or constant ({first.before_freezing}); the pattern's "
        "inputs bind to the values computed from it",
    )


def _evidence(loc, tensors, per_site, capture) -> tuple[str, ...]:
    from sdcompile.core.graph.capture import STAGE_AFTER_FREEZING, STAGE_BEFORE_FREEZING
    from sdcompile.core.graph.sites import tensor_evidence

    out: list[str] = []
    if tensors:
        first = tensors[0]
        site = next((p for p in per_site if first.tensor.startswith(f"{p[0]}.") or not p[0]), per_site[0])
        for stage, subs in ((STAGE_BEFORE_FREEZING, site[1]), (STAGE_AFTER_FREEZING, site[2])):
            within = [n for s in subs for n in s.nodes] or None
            for st in capture.stage(stage):
                out.extend(tensor_evidence(st, first.tensor, within))
        return tuple(out)
    for path, before, _after in per_site[:1]:
        for sub in before:
            shown = "; ".join(f"{name}: {what}" for name, what in sub.inputs[:4])
            out.append(f"before_freezing, site {path or '(model)'}: the subgraph's inputs are {shown}"
                       + (" ..." if len(sub.inputs) > 4 else ""))
    return tuple(out)


# ---------------------------------------------------------------------------------------------- NPU notes
def _npu_sites(loc, trace) -> set[str]:
    codes = set(loc.codes)
    return {c.site for c in trace.calls if c.op.startswith("npu") and c.frame.code in codes}


def _npu_note(loc, extract, taken: set[str], device) -> NpuNote | None:
    from sdcompile.core.zoo.primitives import npu_branches

    if extract is None:
        return None
    catalog = npu_branches()
    fused = tuple(sorted(set(catalog.call.findall(extract.text))))
    if not fused:
        return None
    gate = next((g for g in catalog.gates if g in extract.text), "")
    condition = next((line.strip() for line in extract.text.splitlines() if gate and gate in line), "")
    total = len(loc.sites)
    ops = ", ".join(f"torch_npu.{f}" for f in fused)
    text = (f"diffusers itself calls {ops} here when torch_npu is installed"
            + (f" (`{condition}`)" if condition else "")
            + f"; where that branch runs, an NPU host needs no pattern. {catalog.gate_meaning}. ")
    if device.model_sees_npu:
        text += f"This run ({device.label}) took the branch at {len(taken)} of {total} sites"
        skipped = [s.path for s in loc.sites if s.path not in taken]
        if skipped:
            text += (f"; not at {', '.join(skipped[:4])}{' ...' if len(skipped) > 4 else ''} (the rest of its "
                     "condition is false there), so those sites still need a pattern")
        text += "."
    else:
        text += f"This run ({device.label}) traced without torch_npu, so the branch did not run."
    return NpuNote(fused, gate, condition, len(taken), total, text)


# ------------------------------------------------------------------------------------------------ writing
def _slug(name: str) -> str:
    from sdcompile.workspace.store import safe_name

    return safe_name(name.replace(" (inline)", ".inline").replace("<locals>", "locals"))


def _write(path: Path, text: str) -> None:
    from sdcompile.util.fsutil import atomic_write_text

    atomic_write_text(path, text if text.endswith("\n") else text + "\n")


def _prune_snippets(folder: Path, impls, ws) -> None:
    """Drop snippet files an earlier analyze wrote for implementations this run no longer finds."""
    if not folder.is_dir():
        return
    keep = {Path(p).name for i in impls for p in (i.snippet, i.subgraphs) if p}
    for path in folder.iterdir():
        if path.is_file() and path.name not in keep:
            path.unlink()


def _render_subgraphs(loc, per_site, capture) -> str:
    from sdcompile.core.graph.capture import STAGE_DESCRIPTIONS

    m = capture.metadata
    lines = [
        f"# {loc.op}: {loc.display_name} — the ATen subgraph of each site",
        f"# model {m.model} ({m.dtype}), device {m.device}, torch {m.torch_version}, diffusers {m.diffusers_version}",
        "",
    ]
    for path, before, after in per_site:
        for stage_subs in (before, after):
            for sub in stage_subs:
                lines.append(f"## site {path or '(the model itself)'} — stage {sub.stage} "
                             f"(graph {sub.graph_index}): {STAGE_DESCRIPTIONS[sub.stage]}")
                if sub.shared:
                    lines.append("#   (a graph dynamo compiled from this code itself after a graph break: every site "
                                 "calling it runs this same graph)")
                for name, what in sub.inputs:
                    lines.append(f"#   input {name}: {what}")
                lines.append(sub.render())
                lines.append("")
        if not before and not after:
            lines.append(f"## site {path or '(the model itself)'}: no nodes found in the captured graphs")
            lines.append("")
    return "\n".join(lines)


def _capture_summary(capture, folder: str) -> CaptureSummary:
    from sdcompile.core.graph.capture import STAGE_AFTER_FREEZING, STAGE_BEFORE_FREEZING

    if capture is None:
        return CaptureSummary(0, (), False, "", "", "not compiled: none of the requested primitives ran", "")

    def count(stage: str) -> tuple[int, int, int]:
        ph = ga = folded = 0
        for st in capture.stage(stage):
            for name, origin in st.origins.items():
                if origin.kind == "folded constant":
                    folded += 1
                elif origin.kind != "parameter":
                    continue
                elif st.node(name).op == "placeholder":
                    ph += 1
                else:
                    ga += 1
        return ph, ga, folded

    if not capture.graphs:
        return CaptureSummary(0, (), False, "", "", f"no graphs: {capture.metadata.backend}", "")
    b_ph, b_ga, _ = count(STAGE_BEFORE_FREEZING)
    a_ph, a_ga, a_folded = count(STAGE_AFTER_FREEZING)
    meta = capture.metadata
    folded_text = (f", and {a_folded} constants freeze() folded from parameters (e.g. transposed linear weights)"
                   if a_folded else "")
    note = (
        f"The pattern pass (graph_rewrite_before_freezing) sees parameters as placeholders ({b_ph} placeholders, "
        f"{b_ga} get_attr); after freeze() there are {a_ga} parameter get_attr _frozen_param* nodes"
        f"{folded_text}. Captured with dynamo's "
        "prepare_freezing on, as inductor does for freezing: with a bare torch.compile(model, "
        f"backend=MindieSDBackend()) on torch {meta.torch_version}, dynamo lifts parameters into graph inputs, "
        "freeze() receives no params and they stay placeholders after freezing too."
        if meta.prepare_freezing
        else f"Captured without prepare_freezing: after freeze() parameters are {a_ph} placeholders and {a_ga} "
        "get_attr."
    )
    return CaptureSummary(
        graphs=meta.graph_count,
        stages=meta.stages,
        prepare_freezing=meta.prepare_freezing,
        parameters_before_freezing=f"{b_ph} placeholders, {b_ga} get_attr",
        parameters_after_freezing=f"{a_ph} placeholders, {a_ga} get_attr",
        note=note,
        folder=folder,
        redundant_node_elimination=meta.redundant_node_elimination,
    )


def _write_and_record(result: AnalyzeResult, ws, graphs_dir: Path) -> None:
    from sdcompile.util.serialize import to_jsonable

    head: dict[str, Any] = {k: v for k, v in to_jsonable(result).items() if k not in ("ops",)}
    before = graphs_dir / "graph0.before_freezing.txt"
    for report in result.ops:
        if report.analysis is None:
            continue
        pair = ws.pair_dir(result.model, report.op)
        doc = {**head, "op": report.op, "analysis": to_jsonable(report)}
        _write(pair / "analysis.json", json.dumps(doc, indent=2, ensure_ascii=False))
        evidence = [pair / "analysis.json"] + ([before] if before.is_file() else [])
        evidence += [ws.root / p for i in report.implementations for p in (i.snippet, i.subgraphs) if p]
        if report.present:
            names = "; ".join(f"{i.name} ({i.site_count} site{'s' if i.site_count != 1 else ''})"
                              for i in report.implementations)
            ws.record(result.model, report.op, "analyze", "pass",
                      f"{len(report.implementations)} implementation(s), {report.site_count} site(s): {names}",
                      device=result.device, evidence=evidence)
        else:
            ws.record(result.model, report.op, "analyze", "fail", f"{report.title} is absent from this model",
                      device=result.device, evidence=[pair / "analysis.json"])
