"""GELU on Flux, through `sdcompile run`: upstream's GELUPatternGroup never matches on torch 2.13
(register_replacement registers aten.gelu decomposed, the graph keeps it whole), and neither could a generated
pattern, so scaffold refuses the replacement path and says why; path B generates a graph pass that puts
npu_fast_gelu in place of every tanh GELU after freeze(), the run stops once for the backend edit, and then every
gate passes — integrate's layer 1 finding the pass's fused nodes in the graph that runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scaffold_helpers import git, lint, py_compile

FLUX_GELU_SITES = {
    "transformer_blocks.0.ff.net.0", "transformer_blocks.0.ff_context.net.0", "single_transformer_blocks.0.act_mlp",
}


def _run(cli, target: Path, ws: Path, *extra: str) -> tuple[int, dict]:
    out = cli("run", "--model", "flux", "--op", "gelu", "--repo", str(target), "--workdir", str(ws), *extra)
    return out.exit_code, json.loads((ws / "flux/gelu/run/run-result.json").read_text())


@pytest.mark.slow
def test_flux_gelu_goes_through_a_graph_pass_and_passes_every_gate(target, tmp_path, cli):
    ws = tmp_path / "ws"
    code, result = _run(cli, target, ws)
    assert code == 1 and result["stopped_at"] == "scaffold", result
    assert "aten.gelu.default sits inside the chain" in result["stop_reason"]
    assert any("--path graph-pass" in c for c in result["next_commands"]), result["next_commands"]

    code, result = _run(cli, target, ws, "--path", "graph-pass")
    assert code == 1 and result["stopped_at"] == "register", result  # the backend edit is the user's to apply
    pass_file = target / "mindiesd/compilation/passes/flux_gelu_pass.py"
    test_file = target / "tests/compilation/passes/test_flux_gelu_pass.py"
    text = pass_file.read_text()
    # the chain is the GELU alone: each GELU module's projection stays in the graph
    assert "(torch.ops.aten.gelu.default, (_In(0),), {'approximate': 'tanh'})," in text
    assert "addmm" not in text and "torch.ops.npu.npu_fast_gelu.default" in text
    assert lint(pass_file, test_file).returncode == 0, lint(pass_file, test_file).stdout
    assert py_compile(pass_file, test_file).returncode == 0
    # npu_fast_gelu approximates the tanh GELU: the generated test allows for that, and only for that op
    assert "APPROXIMATION = 0.0208" in test_file.read_text()

    git(target, "apply", str(ws / "flux/gelu/scaffold/backend.diff"))
    code, result = _run(cli, target, ws, "--path", "graph-pass")
    assert code == 0, result
    assert [p["status"] for p in result["phases"]] == ["kept", "kept", "pass", "pass", "skipped", "pass", "pass"]
    scaffold = json.loads((ws / "flux/gelu/scaffold/scaffold.json").read_text())
    assert {r["site"] for r in scaffold["sites"] if r["check"]["hit"]} == FLUX_GELU_SITES
    layers = {layer["number"]: layer for layer in json.loads((ws / "flux/gelu/integrate.json").read_text())["layers"]}
    assert "3 fused node(s), put in after freeze()" in layers[1]["detail"]
    assert "npu.npu_fast_gelu.default 3" in layers[1]["detail"]
    assert "FastGelu/FastGeluV2/GeluV2 0 -> 6" in layers[2]["detail"]  # three sites, two profiled steps
