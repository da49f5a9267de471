"""Capture a torch_npu-shaped profile anywhere: on CPU, torch.profiler's ATen events become the rows of a
kernel_details.csv (one row per op an NPU would launch as one kernel, typed by the kernel catalog's [cpu]
mapping), written into `<label>_<pid>_<timestamp>_ascend_pt/ASCEND_PROFILER_OUTPUT/` with a capture note that
labels the folder a CPU profile. integrate and copy-audit then read it like any profiler output.

A run folder (CPU or NPU) is built under a staging name in the same parent, marked complete last and renamed into
place, so a profile cut short (a kill, Ctrl-C) leaves a staging folder readers skip and the next profile removes,
never a run folder that looks like someone else's output.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sdcompile.catalogs import load
from sdcompile.core.profiles.catalog import KernelCatalog
from sdcompile.core.profiles.graph_sites import write_graph_sites
from sdcompile.core.profiles.locate import (
    CAPTURE_INFO,
    COMPLETE_MARKER,
    KERNEL_FILE,
    OUTPUT_DIR,
    RUN_SUFFIX,
    STAGING_PREFIX,
)
from sdcompile.core.target.graph_nodes import REGION_PREFIX, FinalGraph, align
from sdcompile.util.fsutil import atomic_write_text
from sdcompile.util.log import verbosity

if TYPE_CHECKING:
    from sdcompile.core.target.compile_session import CompileSession

# Not "ProfilerStep#N": torch.profiler renames those to "ProfilerStep*" and the step number is lost.
STEP_MARKER = "sdcompile.step#"
CPU_SOURCE = "cpu profile (torch.profiler via sdcompile profile)"
# A real variant: `Step Id` prepended to the Level0 header with Device_id and the shape columns.
HEADER = ["Step Id", "Device_id", "Name", "Type", "Accelerator Core", "Start Time(us)", "Duration(us)",
          "Wait Time(us)", "Block Dim", "Input Shapes", "Input Data Types", "Input Formats", "Output Shapes",
          "Output Data Types", "Output Formats"]
_DTYPES = {"float": "FLOAT", "c10::BFloat16": "DT_BF16", "c10::Half": "FLOAT16", "double": "DOUBLE",
           "long int": "INT64", "int": "INT32", "bool": "BOOL", "c10::complex<float>": "COMPLEX64",
           "c10::complex<double>": "COMPLEX128", "c10::complex<c10::Half>": "COMPLEX32"}


@dataclass(frozen=True)
class KernelRow:
    step: int
    name: str
    op_type: str  # "N/A" when the catalog has no mapping
    start_ns: int
    dur_ns: int
    input_shapes: str
    input_dtypes: str
    node: tuple[str, int] | None = None  # (graph key, node index) of the graph node it ran as (graph_keys)


def fused_op_types() -> dict[str, str]:
    """Emulated fused op -> the kernel Type it launches on a real NPU (catalogs/fused_ops.toml npu_kernels)."""
    return {op["name"]: op["npu_kernels"][0] for op in load("fused_ops").get("op", []) if op.get("npu_kernels")}


def fused_kernel_calls(calls: Mapping[str, int]) -> dict[str, int]:
    """Fused op -> calls, as kernel Type -> launches an NPU makes for them (the op's name when it has no Type)."""
    types = fused_op_types()
    out: dict[str, int] = {}
    for op, n in calls.items():
        out[types.get(op, op)] = out.get(types.get(op, op), 0) + n
    return out


def kernel_rows(events: list[Any], catalog: KernelCatalog, epoch_ns: int,
                dtypes_by_id: dict[int, list[str]] | None = None,
                graphs: list[tuple[str, FinalGraph]] = ()) -> list[KernelRow]:
    """The kernel rows of torch.profiler FunctionEvents recorded inside `sdcompile.step#N` ranges. `dtypes_by_id`:
    each event's input dtypes by its id, for a torch whose FunctionEvent does not carry them (2.9 does not).
    `graphs` (graph_keys): the final graphs of the compiled forward; each row run inside one of their regions is
    tied to the node it ran as."""
    fused = fused_op_types()
    rows: list[tuple[int, Any, str, tuple[str, int] | None]] = []
    node_of: dict[int, tuple[str, int]] = {}

    def visit(event, step: int, node: tuple[str, int] | None) -> None:
        name = event.name
        node = node_of.get(id(event), node)
        if name.startswith(STEP_MARKER):
            step = int(name[len(STEP_MARKER):])
        elif name.startswith(REGION_PREFIX) and graphs:
            compile_id = name[len(REGION_PREFIX):]
            _tie_region(event, [(k, g) for k, g in graphs if g.compile_id == compile_id], node_of)
        elif name in fused or name.startswith(catalog.cpu_fused_prefixes):
            rows.append((step, event, fused.get(name, "N/A"), node))
            return
        elif name in catalog.cpu_op_types:
            rows.append((step, event, _cpu_type(event, catalog), node))
            return
        elif not event.cpu_children:
            if name.startswith("aten::") and name not in catalog.cpu_no_kernel:
                rows.append((step, event, "N/A", node))
            return
        for child in event.cpu_children:
            visit(child, step, node)

    for event in events:
        if event.cpu_parent is None and event.name.startswith(STEP_MARKER):
            visit(event, 0, None)
    if not rows:
        return []
    base = min(e.time_range.start for _, e, _, _ in rows)
    out = [KernelRow(step, e.name, op_type, epoch_ns + round((e.time_range.start - base) * 1000),
                     max(round(e.time_range.elapsed_us() * 1000), 0), _shapes(e), _dtypes(e, dtypes_by_id or {}),
                     node)
           for step, e, op_type, node in rows]
    out.sort(key=lambda r: (r.start_ns, r.name))
    return out


def _tie_region(region, graphs: list[tuple[str, FinalGraph]], node_of: dict[int, tuple[str, int]]) -> None:
    """Tie the top-level op events of one call of a compiled region to the nodes of its graph (of the graphs one
    compile id names, the one most of the events align with)."""
    tops = []

    def collect(event) -> None:
        for child in event.cpu_children:
            if "::" in child.name:
                tops.append(child)
            else:  # the runtime wrapper's own ranges ("AOTDispatcher Runtime Wrapper Prologue", ...)
                collect(child)

    collect(region)
    names = [e.name for e in tops]
    aligned = [(key, align(names, graph)) for key, graph in graphs]
    if not aligned:
        return
    key, indices = max(aligned, key=lambda a: sum(i >= 0 for i in a[1]))
    for event, index in zip(tops, indices, strict=True):
        if index >= 0:
            node_of[id(event)] = (key, index)


def graph_keys(graphs: list[FinalGraph]) -> list[tuple[str, FinalGraph]]:
    """Each final graph under a key of its own: its compile id, suffixed `#n` when one id names several."""
    seen: dict[str, int] = {}
    for g in graphs:
        seen[g.compile_id] = seen.get(g.compile_id, 0) + 1
    keyed, nth = [], {}
    for g in graphs:
        nth[g.compile_id] = nth.get(g.compile_id, 0) + 1
        keyed.append((g.compile_id if seen[g.compile_id] == 1 else f"{g.compile_id}#{nth[g.compile_id]}", g))
    return keyed


def _cpu_type(event, catalog: KernelCatalog) -> str:
    if event.name == "aten::copy_":
        dtypes = [d for d in (getattr(event, "input_dtypes", None) or [])[:2] if d]
        if len(dtypes) == 2 and dtypes[0] != dtypes[1]:
            return "Cast"
    return catalog.cpu_op_types[event.name]


def _shapes(event) -> str:
    shapes = [s for s in (event.input_shapes or []) if isinstance(s, list) and s]
    return '"' + ";".join(",".join(str(d) for d in s) for s in shapes) + '"' if shapes else "N/A"


def _dtypes(event, dtypes_by_id: dict[int, list[str]]) -> str:
    given = getattr(event, "input_dtypes", None) or dtypes_by_id.get(getattr(event, "id", None), [])
    dtypes = [_DTYPES.get(d, d.upper()) for d in given if d]
    return ";".join(dtypes) if dtypes else "N/A"


def _kineto_dtypes(prof) -> dict[int, list[str]]:
    """Input dtypes per FunctionEvent id (its kineto event's correlation id), read off the kineto events: torch
    2.9 records them there only. Empty when this torch's profiler does not expose them."""
    try:
        return {k.correlation_id(): list(k.dtypes()) for k in prof.profiler.kineto_results.events()}
    except (AttributeError, RuntimeError):
        return {}


def _us(ns: int) -> str:
    return f"{ns // 1000}.{ns % 1000:03d}"


def render_kernel_details(rows: list[KernelRow]) -> str:
    """The CSV text as torch_npu writes it: CRLF, a TAB after each start time, shapes keeping their quotes."""
    lines = [",".join(HEADER)]
    previous_end = None
    for r in rows:
        wait = 0 if previous_end is None else max(r.start_ns - previous_end, 0)
        previous_end = max(previous_end or 0, r.start_ns + r.dur_ns)
        shapes = r.input_shapes.replace('"', '""')
        shapes = f'"{shapes}"' if shapes != "N/A" else shapes
        lines.append(",".join([str(r.step), "0", r.name, r.op_type, "CPU", _us(r.start_ns) + "\t", _us(r.dur_ns),
                               _us(wait), "0", shapes, r.input_dtypes, "ND", "N/A", "N/A", "N/A"]))
    return "\r\n".join(lines) + "\r\n"


def run_folder_name(label: str, when: datetime | None = None) -> str:
    when = when or datetime.now()
    stamp = when.strftime("%Y%m%d%H%M%S") + f"{when.microsecond // 1000:03d}"
    safe = re.sub(r"[^A-Za-z0-9.-]+", "-", label).strip("-") or "run"
    return f"{safe}_{os.getpid()}_{stamp}{RUN_SUFFIX}"


# Called with "staged" once a run folder is complete under its staging name, before it is renamed into place; tests
# set it to interrupt a profile at that point.
step_hook: Callable[[str], None] | None = None


def staging_folder(out: Path, name: str) -> Path:
    """Where this process builds `out/<name>` before renaming it into place."""
    return Path(out) / f"{STAGING_PREFIX}{os.getpid()}-{name}"


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return False  # this process is not writing it: a staging folder of ours is left from an earlier attempt
    try:
        os.kill(pid, 0)
    except PermissionError:
        return True  # it exists, as another user's process
    except (ProcessLookupError, OverflowError):
        return False
    return True


def remove_stale_staging(out: Path) -> list[Path]:
    """Remove the staging folders under `out` whose process is gone (profiles cut short); returns them."""
    removed = []
    for folder in sorted(Path(out).glob(f"{STAGING_PREFIX}*")) if Path(out).is_dir() else []:
        pid = folder.name[len(STAGING_PREFIX):].partition("-")[0]
        if pid.isdigit() and _pid_alive(int(pid)):
            continue  # another live profile is writing it
        if folder.is_dir() and not folder.is_symlink():
            shutil.rmtree(folder)
        else:
            folder.unlink()
        removed.append(folder)
    return removed


def publish(staging: Path, final: Path) -> Path:
    """Mark the finished folder `staging` complete and rename it to `final` (which must not exist)."""
    atomic_write_text(staging / COMPLETE_MARKER, "written completely by sdcompile profile\n")
    if step_hook is not None:
        step_hook("staged")
    os.rename(staging, final)
    return final


@contextmanager
def staged_run_folder(out: Path, name: str) -> Iterator[Path]:
    """Build `out/<name>` in its staging folder (yielded), then publish it; on any exception remove it."""
    staging = staging_folder(out, name)
    staging.mkdir(parents=True)
    try:
        yield staging
        publish(staging, Path(out) / name)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


@dataclass(frozen=True)
class Capture:
    run_dir: Path
    kernel_details: Path
    rows: int
    steps: int
    seconds: float  # wall time of the profiled steps


def capture_cpu(step_fn: Callable[[], Any], steps: int, out: Path, label: str, info: dict[str, Any],
                catalog: KernelCatalog, session: CompileSession | None = None) -> Capture:
    """Run `step_fn` `steps` times under torch.profiler (CPU) and write the torch_npu-shaped folder under `out`;
    with the compile `session` of a compiled `step_fn`, also the fused calls its graphs made and the node each row
    ran as (GRAPH_NODES, graph_sites.py)."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    # A CUDA build of torch on a machine without a GPU (the registry's torch 2.9 wheel) makes kineto log
    # "gpuGetDeviceCount failed" on stderr when profiling starts; only a CPU trace is asked for here. Its USDT
    # level (5: `USDT: ... profiler_start` / `profiler_stop`, printed from C++ past any Python filter) would break
    # the progress display: shown only with -v. Kineto reads the level when it first initialises, so the user's
    # own setting wins.

    os.environ.setdefault("KINETO_LOG_LEVEL", "5" if verbosity() else "6")
    epoch_ns = time.time_ns()
    if session is not None:
        session.fused_calls_run.clear()  # the warm-up's calls are not the profile's
    started = time.perf_counter()
    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for step in range(1, steps + 1):
            with record_function(f"{STEP_MARKER}{step}"):
                step_fn()
    seconds = time.perf_counter() - started
    keyed = graph_keys([g for g in session.final_nodes if g.compile_id]) if session is not None else []
    rows = kernel_rows(list(prof.events()), catalog, epoch_ns, _kineto_dtypes(prof), keyed)
    name = run_folder_name(label)
    with staged_run_folder(out, name) as staging:
        output = staging / OUTPUT_DIR
        output.mkdir()
        atomic_write_text(output / KERNEL_FILE, render_kernel_details(rows))
        prof.export_chrome_trace(str(output / "trace_view.json"))
        note = {"source": CPU_SOURCE, **info, "steps": steps, "rows": len(rows),
                "note": "a CPU profile: durations are CPU times of ATen ops; Type is the Ascend op type an NPU "
                        "launch of each op would report (kernel catalog [cpu] mapping), not an NPU measurement"}
        atomic_write_text(staging / CAPTURE_INFO, json.dumps(note, indent=2) + "\n")
        written = [output / KERNEL_FILE, staging / CAPTURE_INFO]
        if session is not None:
            tied = ((r.start_ns, r.name, *r.node) for r in rows if r.node is not None)
            written.append(write_graph_sites(staging, steps, fused_kernel_calls(session.fused_calls_run), keyed,
                                             tied))
        mask = os.umask(0)
        os.umask(mask)
        for path in written:  # profiler output is shared; mkstemp: 0600
            os.chmod(path, 0o666 & ~mask)
    run_dir = Path(out) / name
    return Capture(run_dir, run_dir / OUTPUT_DIR / KERNEL_FILE, len(rows), steps, seconds)
