"""A profile of a forward sdcompile compiled ties each kernel row to the graph node it ran as (and that node's model
line), and counts the fused calls its compiled graphs made as they ran: benefit names the node behind each new
kernel, and takes R4's hits from the profiles, a recompile during warm-up counted once per run."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import run_cli

DATA = Path(__file__).parent / "data"
MODEL = f"{DATA / 'recompiling_model.py'}:build"
# the model's two q/k norms, as its source writes them (tests/benefit/data/recompiling_model.py)
NORM_LINES = ("q = F.rms_norm(q, (q.shape[-1],), self.weight_q, 1e-6)",
              "k = F.rms_norm(k, (k.shape[-1],), self.weight_k, 1e-6)")
# the tree's two groups that fuse torch.rms_norm: the off side is compiled without both
OFF = ("RMSNormPatternGroup", "WanRmsNormPatternGroup")


@pytest.fixture(scope="module")
def weighed(tmp_path_factory, mindiesd_cache):
    """`sdcompile benefit --model-file` on the recompiling model: (its folder, the two sides, the JSON report)."""
    from sdcompile.core.target.package_cache import scratch_copy
    folder = tmp_path_factory.mktemp("graph-sites")
    tree = scratch_copy(folder / "mindiesd-3.1.0")
    leave_out = [a for g in OFF for a in ("--leave-out", g)]
    result = run_cli("benefit", "--model-file", MODEL, "--op", "rmsnorm", *leave_out, "--repo", str(tree), "--json",
                     cwd=folder)
    assert result.exit_code == 0, result.stderr
    sides = folder / ".sdcompile" / "recompiling_model-build" / "rmsnorm" / "benefit"
    return folder, sides / "off", sides / "on", json.loads(result.stdout)


def _run_dir(side: Path) -> Path:
    (run,) = side.glob("*_ascend_pt")
    return run


def _rows(run: Path) -> list[dict]:
    with (run / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv").open(newline="") as f:
        return list(csv.DictReader(f))


def _ns(start: str) -> int:
    us, _, frac = start.strip().partition(".")
    return int(us) * 1000 + int(frac.ljust(3, "0"))


def test_a_recompiled_graph_counts_its_fused_calls_once_per_run(weighed):
    from sdcompile.core.profiles.graph_sites import read_graph_sites
    from sdcompile.phases.benefit.results import HITS_CAPTURED

    _folder, _off, on, doc = weighed
    run = _run_dir(on)
    note = json.loads((run / "sdcompile_capture.json").read_text())
    # compiled twice (the model caches a value on its first compiled call): inductor counted both compiles' hits
    assert note["pass_log_counts"] == [2, 2] and note["pattern_hits"] == 4
    sites = read_graph_sites(run)
    assert sites.steps == note["steps"] and sites.fused_per_step(("RmsNorm",)) == 2.0  # q and k, once per run
    assert doc["hits"] == 2.0 and doc["hits_from"] == HITS_CAPTURED
    assert "R4" not in {c["code"] for c in doc["causes"]}


def test_every_row_of_the_compiled_forward_is_tied_to_the_node_that_ran_it(weighed):
    from sdcompile.core.profiles.graph_sites import read_graph_sites

    run = _run_dir(weighed[2])
    sites = read_graph_sites(run)
    rows = _rows(run)
    tied = [(r, sites.nodes.get((_ns(r["Start Time(us)"]), r["Name"]))) for r in rows]
    assert rows and all(node is not None for _r, node in tied), [r["Name"] for r, node in tied if node is None]
    for row, node in tied:  # an op's own kernel carries its name; a copy_ kernel runs inside a cast or clone node
        assert node.op == row["Name"] or row["Name"] == "aten::copy_", (row["Name"], node)
    fused = [node for r, node in tied if r["Type"] == "RmsNorm"]
    assert sorted({n.source.split(": ", 1)[1] for n in fused}) == sorted(NORM_LINES)
    assert all("recompiling_model.py:2" in n.source and " in forward" in n.source for n in fused)


def test_each_new_kernel_names_its_node_and_model_line_in_every_report(weighed):
    folder, off, on, doc = weighed
    ((key, fused),) = doc["fused_sites"]
    assert "npu_rms_norm" in key and len(fused) == 2 and all(s["launches"] == 1.0 for s in fused)
    assert sorted(s["source"].split(": ", 1)[1] for s in fused) == sorted(NORM_LINES)
    # a kernel the replacement brought besides (torch 2.13: its cast of the weight) is placed at the same two norms
    for effect in doc["side_effects"]:
        assert {s["source"] for s in effect["sites"]} == {s["source"] for s in fused}, effect
    page = folder / "benefit.html"
    text = run_cli("benefit", str(off), str(on), "--op", "rmsnorm", "--html", str(page), "--force", cwd=folder,
                   env={"COLUMNS": "200"}).stdout
    assert "Where the new kernels come from" in text and NORM_LINES[0] in text and NORM_LINES[1] in text
    assert "pattern hits the on side added: 2 per step (from the profiled graphs' fused calls)" in text
    html = page.read_text()
    assert "Where the new kernels come from: graph node, submodule, model line" in html
    assert all(line in html for line in NORM_LINES)


def test_fewer_fused_launches_than_the_graphs_made_is_r4(weighed, tmp_path):
    """An NPU whose kernel falls back launches no fused kernel at that site, while the graph still calls the op:
    the ON profile with the k norm's RmsNorm rows removed is that run."""
    from sdcompile.core.profiles.graph_sites import read_graph_sites
    folder, off, on, _doc = weighed
    fell_back = tmp_path / "on"
    shutil.copytree(on, fell_back)
    run = _run_dir(fell_back)
    sites = read_graph_sites(run)
    kernels = run / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    lines = kernels.read_bytes().decode().split("\r\n")
    header = next(csv.reader([lines[0]]))
    name, start = header.index("Name"), header.index("Start Time(us)")

    def at_k_norm(line: str) -> bool:
        cells = next(csv.reader([line]))
        node = sites.nodes.get((_ns(cells[start]), cells[name]))
        return cells[name].startswith("npu::npu_rms_norm") and node is not None and NORM_LINES[1] in node.source

    kept = [line for line in lines[1:] if line and not at_k_norm(line)]
    assert len(kept) == len([x for x in lines[1:] if x]) - sites.steps  # one launch per step gone
    kernels.write_bytes(("\r\n".join([lines[0], *kept]) + "\r\n").encode())
    result = run_cli("benefit", str(off), str(fell_back), "--op", "rmsnorm", "--json", cwd=folder)
    doc = json.loads(result.stdout)
    (r4,) = [c for c in doc["causes"] if c["code"] == "R4"]
    assert r4["launches"] == 1.0 and doc["hits"] == 2.0


def test_an_eager_off_side_leaves_the_hits_unknown(weighed, tmp_path):
    """What a model calls fused itself (diffusers does on an NPU host) is not counted in an eager profile: taking
    zero for it would read the model's own calls as hits the ON side added."""
    folder, _off, on, _doc = weighed
    made = run_cli("profile", "--model-file", MODEL, "--mode", "eager", "--out", str(tmp_path / "eager"), cwd=folder)
    assert made.exit_code == 0, made.stderr
    doc = json.loads(run_cli("benefit", str(tmp_path / "eager"), str(on), "--op", "rmsnorm", "--json",
                             cwd=folder).stdout)
    assert doc["hits"] is None and doc["hits_from"] == ""


def test_alignment_skips_the_wrappers_ops_and_nodes_that_recorded_none():
    from sdcompile.core.target.graph_nodes import FinalGraph, GraphNode, align

    graph = FinalGraph("0/0", tuple(GraphNode(f"n{i}", op, "", "") for i, op in
                                    enumerate(["aten::addmm", "aten::view", "npu::npu_rms_norm", "aten::mul"])), ())
    # the runtime wrapper's own detach first; aten::view recorded no event here
    assert align(["aten::detach", "aten::addmm", "npu::npu_rms_norm", "aten::mul", "aten::alias"], graph) == \
        [-1, 0, 2, 3, -1]
