"""What a profile of a forward sdcompile compiled knows beyond its kernel rows (GRAPH_NODES, beside the capture
note): the fused calls the compiled graphs made in the profiled steps, counted as each region ran (so a graph
compiled twice during warm-up counts once per run, where inductor's hit counter counts both compiles), and on CPU,
the graph node each kernel row ran as, with the model line that node came from.

An NPU profile made by `sdcompile profile` has the fused calls only: its kernel rows are the device's, launched by
the ops the CPU side ran, and are not tied to nodes here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from sdcompile.core.profiles.locate import GRAPH_NODES, RankFile
from sdcompile.core.target.graph_nodes import FinalGraph, GraphNode
from sdcompile.util.fsutil import atomic_write_text

RowKey = tuple[int, str]  # a kernel row's start time (ns) and Name: unique within one capture


@dataclass(frozen=True)
class GraphSites:
    steps: int  # the profiled steps
    fused_calls: Mapping[str, int]  # kernel Type (the fused op's, catalogs/fused_ops.toml) -> calls in those steps
    nodes: Mapping[RowKey, GraphNode] = field(default_factory=dict)  # the rows tied to a node (CPU captures)

    def fused_per_step(self, types: Iterable[str]) -> float:
        return sum(self.fused_calls.get(t, 0) for t in types) / self.steps if self.steps else 0.0


@dataclass(frozen=True)
class KernelSite:
    """A graph node some of a kernel's launches ran as."""

    node: str
    op: str  # the node's op ("aten::_to_copy" for the copy_ kernel it runs)
    source: str  # the model line the node came from, "" when the graph did not record it
    module_path: str
    launches: float  # per step


def write_graph_sites(run_dir: Path, steps: int, fused_calls: Mapping[str, int],
                      graphs: Iterable[tuple[str, FinalGraph]] = (),
                      rows: Iterable[tuple[int, str, str, int]] = ()) -> Path:
    """Write GRAPH_NODES into `run_dir`; `graphs` by their key (capture.graph_keys); `rows`: (start ns, Name, graph
    key, node index) per row tied to a node."""
    doc = {
        "steps": steps, "fused_calls": dict(sorted(fused_calls.items())),
        "graphs": {key: [[n.name, n.op, n.source, n.module_path] for n in g.nodes] for key, g in graphs},
        "rows": [list(r) for r in rows],
    }
    path = Path(run_dir) / GRAPH_NODES
    atomic_write_text(path, json.dumps(doc) + "\n")
    return path


def read_graph_sites(run_dir: Path) -> GraphSites | None:
    """GRAPH_NODES of `run_dir`, or None when it has none or it is not one sdcompile wrote (another tool's file
    of that name is not read as ours: the fused calls would feed R4)."""
    path = Path(run_dir) / GRAPH_NODES
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        steps, calls = int(doc["steps"]), {str(k): int(v) for k, v in doc["fused_calls"].items()}
        graphs = {str(cid): [GraphNode(*map(str, n)) for n in nodes] for cid, nodes in doc.get("graphs", {}).items()}
        nodes: dict[RowKey, GraphNode | None] = {}
        for start, name, cid, index in doc.get("rows", []):
            key, node = (int(start), str(name)), graphs[str(cid)][int(index)]
            nodes[key] = node if nodes.get(key, node) == node else None  # two rows, one key: neither is told
    except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError):
        return None
    return GraphSites(steps, calls, {k: n for k, n in nodes.items() if n is not None})


def fused_calls_added(off_ranks: Iterable[RankFile], on_ranks: Iterable[RankFile],
                      types: Iterable[str]) -> float | None:
    """Fused calls of `types` per step the ON side's compiled graphs made beyond the OFF side's (summed over
    ranks), when sdcompile profiled both sides' compiled forwards; None when either side's profile does not say (an
    eager OFF side included: what the model calls fused itself, as diffusers does on an NPU host, is not counted
    there, and would read as hits the ON side added)."""
    types = tuple(types)
    per_side = []
    for ranks in (off_ranks, on_ranks):
        sites = [read_graph_sites(rank.run_dir) for rank in ranks]
        if not sites or any(s is None for s in sites):
            return None
        per_side.append(sum(s.fused_per_step(types) for s in sites))
    return per_side[1] - per_side[0]
