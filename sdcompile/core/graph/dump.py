"""Graph dumps with stable names: `graph<N>.<stage>.txt` per graph and stage, and `capture.json` (metadata,
node counts, op histograms, what every placeholder / get_attr holds)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from sdcompile.core.graph.stages import STAGE_DESCRIPTIONS
from sdcompile.util.fsutil import atomic_write_text
from sdcompile.workspace.artifacts import write_artifact

if TYPE_CHECKING:
    from sdcompile.core.graph.capture import GraphCapture, StageGraph


def stage_filename(graph_index: int, stage: str) -> str:
    return f"graph{graph_index}.{stage}.txt"


def stage_header(capture: GraphCapture, sg: StageGraph) -> str:
    m = capture.metadata
    lines = [
        f"# stage: {sg.stage} — {STAGE_DESCRIPTIONS.get(sg.stage, '')}",
        f"# graph {sg.graph_index + 1} of {m.graph_count}; model {m.model} ({m.dtype}); device {m.device}",
        f"# torch {m.torch_version}, diffusers {m.diffusers_version}; prepare_freezing={m.prepare_freezing}; "
        f"redundant-node elimination: {m.redundant_node_elimination}",
        f"# placeholders {sg.count('placeholder')}, get_attr {sg.count('get_attr')}, "
        f"call_function {sg.count('call_function')}",
    ]
    if sg.origins:
        lines.append("# what the graph's inputs and attributes hold:")
        for name, origin in sg.origins.items():
            lines.append(f"#   {name:24s} {origin.describe()}")
    return "\n".join(lines) + "\n"


def write_capture(capture: GraphCapture, folder: Path) -> list[Path]:
    """Replace the folder's previous dump (a model with fewer graphs now must not leave old ones behind)."""
    folder.mkdir(parents=True, exist_ok=True)
    for stale in [*folder.glob("graph*.*.txt"), folder / "capture.json"]:
        stale.unlink(missing_ok=True)
    written: list[Path] = []
    summary = {"metadata": asdict(capture.metadata), "graphs": [], "untraced": list(capture.untraced)}
    for graph in capture.graphs:
        entry = {"index": graph.index, "stages": {},
                 "ended_by": asdict(graph.ended_by) if graph.ended_by is not None else None}
        for stage, sg in graph.stages.items():
            path = folder / stage_filename(graph.index, stage)
            atomic_write_text(path, stage_header(capture, sg) + "\n" + sg.text)
            written.append(path)
            entry["stages"][stage] = {
                "file": path.name,
                "placeholders": sg.count("placeholder"),
                "get_attr": sg.count("get_attr"),
                "call_function": sg.count("call_function"),
                "ops": sg.op_histogram(),
                "origins": {name: asdict(o) for name, o in sg.origins.items()},
            }
        summary["graphs"].append(entry)
    meta_path = folder / "capture.json"
    write_artifact("capture", meta_path, summary)
    written.append(meta_path)
    return written
