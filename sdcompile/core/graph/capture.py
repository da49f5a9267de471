"""Compile a model the way MindieSDBackend does and keep its graph at every stage the backend sees it.

MindIE-SD 3.1.0 (`mindiesd/compilation/mindie_sd_backend.py`) compiles with
`aot_autograd(fw_compiler=compile_inner, decompositions=select_custom_decomp_table())` (an empty table), and
compile_inner runs `graph_rewrite_before_freezing` (ReduandantNodeEliminationPass, then the pattern pass), then
`torch._inductor.freezing.freeze()`, then `graph_rewrite_after_freezing`. The stages kept here:

    dynamo           the torch-level FX graph dynamo hands to the backend
    aot              the AOT inference forward graph (ATen ops) as fw_compiler receives it
    before_freezing  after redundant-node elimination: the graph the pattern pass matches against
    after_patterns   after the pattern pass, when one is given (analysis runs none)
    after_freezing   freeze()'s output: what graph_rewrite_after_freezing (and a custom graph pass) sees

Every stage keeps its node meta (`stack_trace`, `nn_module_stack`), so nodes map back to submodules and source
lines (`sdcompile.core.graph.nodes`), and `origins` says what each placeholder / get_attr node holds (which
parameter, buffer or input: tensor_origins.py).

Two settings differ from a bare `torch.compile(model, backend=MindieSDBackend())` on purpose, and the metadata
records both:
  * prepare_freezing (default True): on torch >= 2.5 dynamo lifts parameters into graph inputs, so the
    TracingContext carries no params and freeze() turns nothing into constants — parameters stay placeholders
    after "freezing". With dynamo's `prepare_freezing` (what inductor does when `freezing=True`; also
    TORCHDYNAMO_PREPARE_FREEZING=1) parameters reach freeze() as params and become `get_attr _frozen_param*`,
    which is what the backend's freezing step is written for. Pass False to see the bare behaviour.
  * CPU weight prepacking off: on CPU, freeze() would rewrite linears into mkldnn packed ops (inductor's
    `cpp.weight_prepack`), a CPU-only rewrite an NPU host never sees.
Work dynamo does only for logs that are off (post-compile collection, trace-line function names, the guard-latency
probe) is skipped; it changes no graph (torchcompat.dynamo.capture_config).
"""

from __future__ import annotations

import gc
import importlib.metadata
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sdcompile.core.graph.dump import write_capture
from sdcompile.core.graph.graph_breaks import GraphBreak, break_places, ended_by, untraced_since
from sdcompile.core.graph.nodes import fqn_from_source_path, graph_copy, module_path, module_stack, op_name
from sdcompile.core.graph.redundant_nodes import eliminate_redundant_nodes
from sdcompile.core.graph.stages import (
    STAGE_AFTER_FREEZING,
    STAGE_AFTER_PATTERNS,
    STAGE_AOT,
    STAGE_BEFORE_FREEZING,
    STAGE_DYNAMO,
    STAGES,
)
from sdcompile.core.graph.tensor_origins import (
    TensorOrigin,
    aot_origins,
    dynamo_origins,
    frozen_origins,
    tensor_identities,
)
from sdcompile.core.torchcompat import dynamo
from sdcompile.core.torchcompat.dynamo import capture_config
from sdcompile.core.zoo.models import quiet_model_warnings

PassFn = Callable[[Any], Any]


@dataclass(frozen=True)
class StageGraph:
    stage: str
    graph_index: int
    gm: Any  # torch.fx.GraphModule (a private copy where a later stage edits the graph in place)
    origins: Mapping[str, TensorOrigin]  # node name -> origin, for placeholder and get_attr nodes
    text: str  # gm.print_readable(): ATen lines with "# File: ... code: ..." source comments
    root: str = ""  # the model submodule whose forward this graph was compiled from ("" = the model)
    module_names: Mapping[str, str] = field(default_factory=dict, repr=False)  # id key -> dotted module name

    @property
    def nodes(self):
        return self.gm.graph.nodes

    def count(self, op: str) -> int:
        return sum(1 for n in self.gm.graph.nodes if n.op == op)

    def op_histogram(self) -> dict[str, int]:
        hist = Counter(op_name(n) for n in self.gm.graph.nodes if n.op == "call_function")
        return dict(sorted(hist.items(), key=lambda kv: (-kv[1], kv[0])))

    def module_stack(self, node) -> tuple[tuple[str, str], ...]:
        return module_stack(node, self.module_names)

    def module_path(self, node) -> str:
        """The innermost model submodule of a node, as a dotted name in the whole model."""

        return module_path(node, self.module_names, self.root) or ""

    def node(self, name: str):
        for n in self.gm.graph.nodes:
            if n.name == name:
                return n
        raise KeyError(name)


@dataclass(frozen=True)
class CapturedGraph:
    """One dynamo graph (a model with graph breaks yields several) at each captured stage."""

    index: int
    stages: Mapping[str, StageGraph]
    ended_by: GraphBreak | None = None  # the graph break after this graph (None: it ends at the forward's return)


@dataclass(frozen=True)
class CaptureMetadata:
    model: str
    dtype: str
    device: str  # "npu", "cpu (emulated npu)" or "cpu"
    torch_version: str
    diffusers_version: str | None
    python_version: str
    backend: str  # how the graphs were compiled
    decompositions: int  # entries in the decomposition table given to aot_autograd
    redundant_node_elimination: str  # whose pass produced before_freezing
    pattern_pass: str | None
    prepare_freezing: bool
    cpu_weight_prepack: bool
    fullgraph: bool
    graph_count: int
    stages: tuple[str, ...]
    seconds: float


@dataclass(frozen=True)
class GraphCapture:
    metadata: CaptureMetadata
    graphs: tuple[CapturedGraph, ...]
    output: Any = field(default=None, repr=False)  # what the compiled model returned
    module_names: Mapping[str, str] = field(default_factory=dict, repr=False)  # id(module) key -> dotted name
    # the graph breaks that split the forward, each place once with how many graphs ended there (break_places)
    breaks: tuple[GraphBreak, ...] = ()
    untraced: tuple[str, ...] = ()  # why dynamo gave up on code no graph break names (graph_breaks.untraced_since)

    def stage(self, name: str) -> list[StageGraph]:
        """That stage of every graph (graph order)."""
        return [g.stages[name] for g in self.graphs if name in g.stages]

    def dump(self, folder: Path | str) -> list[Path]:
        """Write `graph<N>.<stage>.txt` for every graph and stage, plus `capture.json`; returns the paths."""

        return write_capture(self, Path(folder))


# ---------------------------------------------------------------------------------------------- capturing
def capture_graphs(
    module: Any,
    inputs: Mapping[str, Any],
    *,
    model: str = "",
    dtype: str = "",
    device: str | None = None,
    redundant_node_elimination: PassFn | None = None,
    redundant_node_elimination_name: str | None = None,
    pattern_pass: PassFn | None = None,
    pattern_pass_name: str | None = None,
    freezing: bool = True,
    prepare_freezing: bool = True,
    decompositions: Mapping[Any, Any] | None = None,
    fullgraph: bool = False,
) -> GraphCapture:
    """Compile `module(**inputs)` (under no_grad, one call) and return its graphs at every stage.

    `redundant_node_elimination` defaults to sdcompile's equivalent of MindIE-SD's pass; pass the target's
    `ReduandantNodeEliminationPass()` to use the real one. `pattern_pass` (e.g. the target's PatternMatchPass
    with some groups registered) adds the after_patterns stage. `decompositions` defaults to MindIE-SD 3.1.0's
    table, which is empty. Dynamo's caches are reset first, so earlier compiles in the process do not leak in.
    """
    import torch

    if redundant_node_elimination is None:
        redundant_node_elimination = eliminate_redundant_nodes
        redundant_node_elimination_name = "sdcompile.core.graph.redundant_nodes (the same rules as MindIE-SD's pass)"
    rne_name = redundant_node_elimination_name or _callable_name(redundant_node_elimination)
    decompositions = dict(decompositions or {})
    identities = tensor_identities(module, inputs)
    module_names = {str(id(m)): name for name, m in module.named_modules()}
    graphs: list[CapturedGraph] = []

    def backend(dynamo_gm, example_inputs):
        index = len(graphs)
        stages: dict[str, StageGraph] = {}
        root = _graph_root(dynamo_gm, module_names)
        ended = ended_by(dynamo_gm)

        def stage(name, gm, origins):
            stages[name] = _stage(name, index, gm, origins, root, module_names)

        # no copy: neither AOT nor the backend's passes edit it
        stage(STAGE_DYNAMO, dynamo_gm, dynamo_origins(dynamo_gm, example_inputs, identities))

        def compile_inner(aot_gm, aot_inputs):
            origins = aot_origins(aot_gm, example_inputs, identities)
            stage(STAGE_AOT, graph_copy(aot_gm), origins)
            redundant_node_elimination(aot_gm)
            # a stage keeps its own copy only where a later step edits aot_gm in place (the pattern pass, freeze())
            edited_later = pattern_pass is not None or freezing
            stage(STAGE_BEFORE_FREEZING, graph_copy(aot_gm) if edited_later else aot_gm, origins)
            if pattern_pass is not None:
                pattern_pass(aot_gm)
                stage(STAGE_AFTER_PATTERNS, graph_copy(aot_gm) if freezing else aot_gm, origins)
            if not freezing:
                graphs.append(CapturedGraph(index, dict(stages), ended))
                return aot_gm
            frozen, preserved = dynamo.freeze(dynamo_gm, aot_gm, aot_inputs)
            stage(STAGE_AFTER_FREEZING, frozen, frozen_origins(frozen, origins))
            graphs.append(CapturedGraph(index, dict(stages), ended))

            def run_frozen(args):  # as MindieSDBackend's freezing_compile wrapper: only the kept inputs
                kept = [args[i] for i in preserved]
                args.clear()
                return frozen(*kept)

            run_frozen._boxed_call = True  # type: ignore[attr-defined]
            return run_frozen

        return dynamo.aot_autograd(fw_compiler=compile_inner, decompositions=decompositions)(dynamo_gm, example_inputs)

    started = time.perf_counter()
    dynamo.reset()
    gave_up_before = dynamo.untraced_counts()
    try:
        with _capture_settings(prepare_freezing), torch.no_grad(), quiet_model_warnings(), \
                dynamo.graph_break_warnings_held():
            compiled = torch.compile(module, backend=backend, fullgraph=fullgraph)
            output = compiled(**inputs)
    finally:
        dynamo.reset()  # drop the compiled code: it holds the frozen graphs and guards on this module
    seconds = time.perf_counter() - started

    produced = tuple(s for s in STAGES if any(s in g.stages for g in graphs))
    metadata = CaptureMetadata(
        model=model or type(module).__name__,
        dtype=dtype,
        device=device or _device_label(),
        torch_version=torch.__version__,
        diffusers_version=_version("diffusers"),
        python_version=sys.version.split()[0],
        backend="aot_autograd(fw_compiler=compile_inner, decompositions=<table>) as MindieSDBackend builds it, "
        "one call under torch.no_grad()",
        decompositions=len(decompositions),
        redundant_node_elimination=rne_name,
        pattern_pass=(pattern_pass_name or _callable_name(pattern_pass)) if pattern_pass is not None else None,
        prepare_freezing=prepare_freezing,
        cpu_weight_prepack=False,
        fullgraph=fullgraph,
        graph_count=len(graphs),
        stages=produced,
        seconds=round(seconds, 3),
    )
    breaks = break_places(g.ended_by for g in graphs)
    return GraphCapture(metadata=metadata, graphs=tuple(graphs), output=output, module_names=module_names,
                        breaks=breaks, untraced=untraced_since(gave_up_before, breaks))


@contextmanager
def _capture_settings(prepare_freezing: bool) -> Iterator[None]:
    # The cyclic GC walks the whole heap again and again while dynamo allocates; the capture frees its cycles
    # when it is done, so collection can wait.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        with capture_config(prepare_freezing):
            yield
    finally:
        if gc_was_enabled:
            gc.enable()


def _stage(stage: str, index: int, gm, origins: Mapping[str, TensorOrigin], root: str,
           module_names: Mapping[str, str]) -> StageGraph:
    text = gm.print_readable(print_output=False, include_stride=False, include_device=False, colored=False)
    return StageGraph(stage=stage, graph_index=index, gm=gm, origins=dict(origins), text=text, root=root,
                      module_names=module_names)


def _graph_root(dynamo_gm, module_names: Mapping[str, str]) -> str:
    """The model submodule whose forward a graph was compiled from. After a graph break dynamo compiles inner
    frames on their own; their module paths start at that frame's `self` (`L['self'].norm1` for a block), so
    the root is the exact name of a stacked module minus that relative path."""

    votes: Counter = Counter()
    for node in dynamo_gm.graph.nodes:
        for key, value in (node.meta.get("nn_module_stack") or {}).items():
            full = module_names.get(str(key))
            relative = fqn_from_source_path(str(value[0] if isinstance(value, tuple) else value))
            if full is None:
                continue
            if not relative:
                votes[full] += 1
            elif full == relative or full.endswith("." + relative):
                votes[full[: len(full) - len(relative)].rstrip(".")] += 1
    return votes.most_common(1)[0][0] if votes else ""


# -------------------------------------------------------------------------------------------------- helpers
def _device_label() -> str:
    try:
        from sdcompile.core.npu.device import active
    except ImportError:  # pragma: no cover - the device layer ships with sdcompile
        return "cpu"
    info = active()
    return info.label if info is not None else "cpu"


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _callable_name(fn: Any) -> str:
    cls = fn if isinstance(fn, type) else type(fn)
    name = getattr(fn, "__qualname__", None) or cls.__qualname__
    module = getattr(fn, "__module__", None) or cls.__module__
    return f"{module}.{name}"
