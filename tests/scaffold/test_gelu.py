"""GELU on Flux: upstream's GELUPatternGroup never matches on torch 2.13 (register_replacement registers
aten.gelu decomposed, the graph keeps it whole), and neither could a generated pattern, so scaffold refuses the
replacement path and says why; path B generates a graph pass that replaces every tanh GELU with npu_fast_gelu after
freeze(), and integrate's layer 1 finds its fused nodes in the graph that runs."""

from __future__ import annotations

import json

import pytest
from scaffold_helpers import git, lint, passed_count, py_compile, run_generated_tests

FLUX_GELU_SITES = {
    "transformer_blocks.0.ff.net.0", "transformer_blocks.0.ff_context.net.0", "single_transformer_blocks.0.act_mlp",
}


@pytest.mark.slow
def test_flux_gelu_needs_a_graph_pass_which_replaces_every_site(target, tmp_path, cli):
    ws = str(tmp_path / "ws")
    refused = cli("scaffold", "--model", "flux", "--op", "gelu", "--repo", str(target), "--workdir", ws, "--json")
    assert refused.exit_code == 1, refused.stderr[-2000:]
    result = json.loads(refused.stdout)
    assert result["decision"] == "cannot generate" and result["files"] == []
    assert {r["site"] for r in result["sites"]} == FLUX_GELU_SITES
    for row in result["sites"]:
        assert row["production"]["status"] == "not replaced"  # GELUPatternGroup is enabled and misses
        assert "aten.gelu.default sits inside the chain" in row["reason"]
    assert any("--path graph-pass" in step for step in result["next_steps"])

    made = cli("scaffold", "--model", "flux", "--op", "gelu", "--path", "graph-pass", "--repo", str(target),
               "--workdir", ws, "--json")
    assert made.exit_code == 0, made.stderr[-3000:]
    result = json.loads(made.stdout)
    assert {r["site"] for r in result["sites"] if r["check"]["hit"]} == FLUX_GELU_SITES
    pass_file = target / "mindiesd/compilation/passes/flux_gelu_pass.py"
    test_file = "tests/compilation/passes/test_flux_gelu_pass.py"
    text = pass_file.read_text()
    # the chain is the GELU alone: the projection before it stays in the graph
    assert "(torch.ops.aten.gelu.default, (_In(0),), {'approximate': 'tanh'})," in text
    assert "addmm" not in text and "torch.ops.npu.npu_fast_gelu.default" in text
    assert lint(pass_file, target / test_file).returncode == 0, lint(pass_file, target / test_file).stdout
    assert py_compile(pass_file, target / test_file).returncode == 0
    # npu_fast_gelu approximates the tanh GELU: the generated test allows for that, and only for that op
    assert "APPROXIMATION = 0.0208" in (target / test_file).read_text()

    git(target, "apply", str(tmp_path / "ws/flux/gelu/scaffold/backend.diff"))
    proc = run_generated_tests(target, test_file)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert passed_count(proc.stdout) == 3  # one site module, the model frozen and lifted

    integrated = cli("integrate", "--model", "flux", "--op", "gelu", "--repo", str(target), "--workdir", ws,
                     "--json")
    layers = {layer["number"]: layer for layer in json.loads(integrated.stdout)["layers"]}
    assert layers[1]["verdict"] == "pass", layers[1]
    assert "3 fused node(s), put in after freeze()" in layers[1]["detail"]
    assert "npu.npu_fast_gelu.default 3" in layers[1]["detail"]
    assert layers[3]["verdict"] == "pass", layers[3]
