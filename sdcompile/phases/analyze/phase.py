"""Phase 1, `sdcompile analyze`: find, extract and classify each primitive of a model.

1. Build the model (zoo or --model-file) on the active device (real NPU, emulated NPU, or plain CPU).
2. Run one recorded forward (`zoo.runtrace`) and locate each primitive's implementations and sites by what ran
   (`zoo.locate`, rules: each op's [primitive] in catalogs/ops/).
3. Compile the way MindieSDBackend does and keep the graphs (`graph.capture`): each site's ATen subgraph as the
   pattern pass sees it (before_freezing), and after freeze().
4. Per implementation: complete source with the lines that ran, where its tensors come from with graph
   evidence, the recipe's path decision (register_replacement or GraphPatternEntry), and the
   NPU note when diffusers itself calls a torch_npu fused op there.
5. Write analysis.json, snippets and graph dumps to the workspace and record phase 1 for each model/op pair.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from sdcompile.core.environment import collect_versions
from sdcompile.core.graph.capture import CaptureMetadata, GraphCapture, capture_graphs
from sdcompile.core.npu.device import activate_for_command
from sdcompile.core.ops import OPS
from sdcompile.core.target.discovery import find_target
from sdcompile.core.target.loader import load_target
from sdcompile.core.zoo.build_options import ModelBuild
from sdcompile.core.zoo.locate import locate
from sdcompile.core.zoo.model_step import ModelRequest, first_forward
from sdcompile.core.zoo.models import parse_dtype
from sdcompile.core.zoo.raised_at import first_line
from sdcompile.core.zoo.runtrace import trace_forward
from sdcompile.core.zoo.unexercised import unexercised
from sdcompile.phases.analyze.artifacts import write_and_record
from sdcompile.phases.analyze.capture_summary import capture_summary
from sdcompile.phases.analyze.implementation import op_report
from sdcompile.phases.analyze.results import AnalyzeResult
from sdcompile.phases.pair_scope import holds_pair
from sdcompile.util.choices import check_choice
from sdcompile.util.errors import BadInput
from sdcompile.util.input_checks import writable_dir
from sdcompile.workspace.store import Workspace, resolve_workdir, safe_name

OP_CHOICES = (*OPS, "all")

Progress = Callable[[str], None]


def _ops_for(op: str) -> tuple[str, ...]:
    wanted = check_choice(op, OP_CHOICES, "op")
    return OP_CHOICES[:-1] if wanted == "all" else (wanted,)


@holds_pair()
def analyze(
    model: str | None = None,
    model_file: str | None = None,
    op: str = "all",
    dtype: str = "bf16",
    plain_cpu: bool = False,
    workdir: Path | str | None = None,
    progress: Progress | None = None,
    repo: Path | str | None = None,
    timeout: float | None = None,
    build: ModelBuild | None = None,
    after_freezing: bool = False,
) -> AnalyzeResult:
    """Phase 1 on `model`/`model_file` (built as `build` says: --size, --config, --num-layers, --inputs,
    --model-capture). With `repo` (a MindIE-SD tree), the graphs are captured with the tree's own
    redundant-node pass and decomposition table, as its backend compiles; without, with sdcompile's equivalent
    pass (graph.redundant_nodes), said in the result. `timeout`: seconds the model's build and its forward may each
    take (None: $SDCOMPILE_TIMEOUT, else 600; 0: no limit). The capture stops at the graph the pattern pass sees,
    where every carrier the maintainers accept matches; `after_freezing` also runs freeze() (as the backend does
    next; about a third of the capture) to show how it holds each module tensor."""

    ops = _ops_for(op)
    dtype = parse_dtype(dtype)
    request = ModelRequest(model, model_file, build, dtype, timeout)
    spec = request.spec  # before anything heavy: a typo fails fast
    writable_dir(workdir or resolve_workdir(), "--workdir")  # and a workspace it cannot write, before the model runs
    say = progress or (lambda _text: None)
    started = time.perf_counter()
    timings: dict[str, float] = {}

    device = activate_for_command(plain_cpu)  # before diffusers is imported
    tree, backend = _target_backend(repo, plain_cpu)
    say(f"building {spec.name} ({dtype}) on {device.label}")

    t = time.perf_counter()
    built, trace = first_forward(request, trace_forward)
    timings["build"] = built.build_seconds
    located = locate(trace, type(built.module), ops)
    timings["locate"] = time.perf_counter() - t - built.build_seconds  # the recorded forward and locating
    t = time.perf_counter()
    static = unexercised(trace, built.module, built.inputs, ops, located)  # in the source, not run
    timings["source scan"] = time.perf_counter() - t

    ws = Workspace(workdir)
    graphs_dir = ws.root / _safe(built.name) / "graphs"
    capture = None
    if any(located.values()):  # nothing located: no subgraph to show, so no compile to pay for
        say(f"compiling as MindieSDBackend does (dynamo, AOT{', freeze' if after_freezing else ''})")
        t = time.perf_counter()
        try:
            capture = capture_graphs(built.module, built.inputs, model=built.name, dtype=dtype,
                                     device=device.label, freezing=after_freezing, **backend)
        except Exception as exc:  # dynamo/AOT/freeze cannot compile this model: report what ran, without graphs
            capture = _failed_capture(exc, built, dtype, device.label)
        timings["capture"] = time.perf_counter() - t

    say("extracting sources, subgraphs and parameter sources")
    t = time.perf_counter()
    if capture is not None:
        capture.dump(graphs_dir)
    summary = capture_summary(capture, ws.relative(graphs_dir))
    reports = [op_report(name, op != "all", located[name], trace, capture, built, device, ws, static.get(name, ()))
               for name in ops]
    timings["extract"] = time.perf_counter() - t

    missing = tuple(r.op for r in reports if r.requested and not r.present)
    result = AnalyzeResult(
        model=built.name,
        label=built.label,
        model_class=built.class_name,
        origin=spec.origin,
        build=spec.build.fingerprint(),
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
        model_notes=built.notes,
    )
    write_and_record(result, ws, graphs_dir)
    return result


def _target_backend(repo: Path | str | None, plain_cpu: bool) -> tuple[object | None, dict]:
    """(the tree, capture_graphs keywords) for `repo`: its redundant-node pass and decomposition table, the code
    MindieSDBackend runs before its pattern pass. No repo: (None, {}), sdcompile's equivalent pass."""
    if repo is None:
        return None, {}
    if plain_cpu:
        raise BadInput("--plain-cpu and --repo together: the target's code runs under the emulated NPU",
                       "drop --plain-cpu to capture with the tree's passes, or drop --repo")

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

    meta = CaptureMetadata(
        model=built.name, dtype=dtype, device=device, torch_version=_torch_version(),
        diffusers_version=_version("diffusers"), python_version=sys.version.split()[0],
        backend=f"torch.compile failed: {type(exc).__name__}: {first_line(exc)[:300]}", decompositions=0,
        redundant_node_elimination="", pattern_pass=None, prepare_freezing=True, cpu_weight_prepack=False,
        fullgraph=False, graph_count=0, stages=(), seconds=0.0,
    )
    return GraphCapture(metadata=meta, graphs=())


def _safe(name: str) -> str:
    return safe_name(name)
