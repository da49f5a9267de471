"""GELU and AdaLN on Flux, through `sdcompile run`. From torch 2.12 on register_replacement registers aten.gelu and
aten.native_layer_norm decomposed while the graph keeps them whole, so neither upstream's GELU/AdaLayerNorm groups
nor any generated pattern can match: scaffold's --path auto takes a GraphPatternEntry carrier and says why. Before
2.12 (MindIE-SD pins 2.9) the groups are registered as written: scaffold reuses them and every gate passes with
nothing generated. Before 2.9 tracing keeps the whole-dimension slices of `(1 + scale)[:, None, :]` (Flux's
norm_out), which no pattern matches: there scaffold reuses the groups for the other sites and writes entries for
that one. register wires the carrier's registration call under its flag, and the run passes every gate in one go,
integrate's layer 1 finding the entries' fused nodes after the pattern pass. No custom graph pass is written."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from scaffold_helpers import lint, py_compile

from sdcompile.core.torchcompat.behaviours import holds
from sdcompile.phases.scaffold.render import reason_text


@dataclass(frozen=True)
class Case:
    op: str
    refusal: str  # the pattern path's reason at every site whose own chain can be written
    sites: frozenset[str]  # sites the generated entries replace
    unwritable: dict  # site -> why its own nodes are no chain (the entries may replace it anyway)
    table_line: str  # one entry of the carrier's chain table
    not_in_pass: tuple[str, ...]  # ops before the chain's start that must stay outside it
    fused_call: str
    approximation: str | None  # what the generated test adds to atol, when the fused op approximates
    fused_nodes: str  # layer 1: fused nodes in the graph that runs
    kernels: str  # layer 2: the fused kernel's count, eager -> compile, over the two profiled steps
    reused: tuple[str, ...]  # the upstream groups scaffold reuses where they are registered as written
    sliced: frozenset[str] = frozenset()  # sites written `t[:, None, :]`, whose whole-dimension slices torch < 2.9
    # keeps in the graph (full-slices-traced): no group or pattern matches them there, an entry does
    running_fused: str = ""  # layer 1: the fused op's count in the graph that runs, upstream's and the entries'


CASES = [
    Case(
        op="gelu",
        refusal="aten.gelu.default sits inside the chain",
        sites=frozenset({"transformer_blocks.0.ff.net.0", "transformer_blocks.0.ff_context.net.0",
                         "single_transformer_blocks.0.act_mlp"}),
        unwritable={},
        table_line="(torch.ops.aten.gelu.default, (_In(0),), {'approximate': 'tanh'}),",
        not_in_pass=("addmm",),  # each GELU module's projection
        fused_call="torch.ops.npu.npu_fast_gelu.default",
        approximation="APPROXIMATION = 0.0208",
        fused_nodes="3 fused node(s); ",
        kernels="FastGelu/FastGeluV2/GeluV2 0 -> 6",
        reused=("GELUPatternGroup",),
    ),
    Case(
        op="adaln",
        refusal="aten.native_layer_norm.default sits inside the chain",
        # the block's inline modulations (of the image and the text stream, after the separate norm2 and
        # norm2_context modules) are one site each, extended up to their LayerNorm: the same chain as the modules'
        sites=frozenset({"transformer_blocks.0.norm1", "transformer_blocks.0.norm1_context", "norm_out",
                         "single_transformer_blocks.0.norm", "transformer_blocks.0#1", "transformer_blocks.0#2"}),
        unwritable={},
        table_line="(torch.ops.aten.native_layer_norm.default, (_In(0), [32], None, None, _epsilon), {}),",
        not_in_pass=("addmm", "split", "silu"),  # the conditioning linear and its chunk
        fused_call="torch.ops.mindiesd.adaln.default",
        approximation=None,
        fused_nodes="6 fused node(s); ",
        kernels="AdaLayerNorm/AdaLayerNormV2/Modulate/scale_shift_kernel/gather_scale_shift_kernel 0 -> 12",
        reused=("AdaLayerNormPatternGroup", "NormOutAdaLayerNormPatternGroup"),
        sliced=frozenset({"norm_out"}),
        running_fused="mindiesd.adaln.default 6",
    ),
]


def _read(ws: Path, op: str, name: str) -> dict:
    return json.loads((ws / "flux" / op / name).read_text())


def _run(cli, target: Path, ws: Path, op: str, *extra: str) -> tuple[int, dict]:
    out = cli("run", "--model", "flux", "--op", op, "--repo", str(target), "--workdir", str(ws), *extra)
    return out.exit_code, _read(ws, op, "run/run-result.json")


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[c.op for c in CASES])
def test_flux_op_goes_through_graph_pattern_entries_and_passes_every_gate(case, target, tmp_path, cli):
    ws, op = tmp_path / "ws", case.op
    code, result = _run(cli, target, ws, op)
    override, slices = holds("decomposition-override"), holds("full-slices-traced")
    if not override and not (slices and case.sliced):
        _upstream_groups_reused(case, ws, code, result)
        return
    # the sites no pattern (upstream's or generated) can match: every site from 2.12 on, the sliced ones before 2.9;
    # --path auto takes a GraphPatternEntry for them and says why
    scaffold = _read(ws, op, "scaffold/scaffold.json")
    rows = {row["site"]: row for row in scaffold["sites"]}
    entry_sites = case.sites if override else case.sliced
    refusal = case.refusal if override else "aten.slice.Tensor sits inside the chain"
    assert {site for site, row in rows.items() if row["need"] == "graph-entry"} == entry_sites, rows
    assert all(row["need"] == "covered" for site, row in rows.items() if site not in entry_sites), rows
    auto = [p for p in scaffold["paths"] if p["path"] == "graph-entry"]
    assert auto and all(p["why"]["code"] in ("auto-entry", "one-carrier") for p in auto), auto
    assert any(refusal in reason_text(p["why"]) for p in auto), auto
    assert not any(p["path"] == "graph-pass" for p in scaffold["paths"]) and not scaffold["backend_diff"]
    assert code == 0, result
    assert [p["status"] for p in result["phases"]] == ["pass", "pass", "pass", "pass", "skipped", "pass", "pass"]
    carrier = target / f"mindiesd/compilation/patterns/flux_{op}_pattern.py"
    test_file = target / f"tests/compilation/patterns/test_flux_{op}_pattern.py"
    assert not (target / "mindiesd/compilation/passes" / f"flux_{op}_pass.py").exists()
    text = carrier.read_text()
    assert case.table_line in text and case.fused_call in text
    assert f"def register_flux_{op}_graph_entries(pattern_pass):" in text
    assert not [name for name in case.not_in_pass if f"aten.{name}." in text]
    assert lint(carrier, test_file).returncode == 0, lint(carrier, test_file).stdout
    assert py_compile(carrier, test_file).returncode == 0
    test_text = test_file.read_text()
    if case.approximation:  # and only then: the other recipes' tests keep their plain tolerance
        assert case.approximation in test_text
    else:
        assert "APPROXIMATION" not in test_text
    passes_init = (target / "mindiesd/compilation/passes/__init__.py").read_text()
    call = passes_init.index(f"register_flux_{op}_graph_entries(pattern_match_pass.pattern_pass)")
    assert call < passes_init.index("for config_key"), "the carrier is registered ahead of pattern_registry's groups"
    assert {site for site, r in rows.items() if r["check"] and r["check"]["hit"]} == entry_sites
    # every fused call the entries put in the model is judged on the NPU's kernel (the handler gives the inserted
    # nodes their values, so their shapes are known) and passes
    verify = _read(ws, op, "verify/verify.json")
    verdicts = [k["check"]["verdict"] for g in verify["groups"] for k in g["model"]["kernels"]]
    assert verdicts and set(verdicts) == {"passes"}, verdicts
    layers = {layer["number"]: layer for layer in _read(ws, op, "integrate.json")["layers"]}
    assert (case.fused_nodes if override else case.running_fused) in layers[1]["detail"], layers[1]
    assert case.kernels in layers[2]["detail"], layers[2]


def _upstream_groups_reused(case: Case, ws: Path, code: int, result: dict) -> None:
    """torch <= 2.11: the run reuses upstream's groups and passes every gate, with no pattern or pass written."""
    assert code == 0, result
    assert [p["status"] for p in result["phases"]] == ["pass", "info", "skipped", "pass", "pass", "pass", "pass"]
    scaffold = _read(ws, case.op, "scaffold/scaffold.json")
    assert scaffold["decision"] == "reuse" and scaffold["files"] == []
    for group in case.reused:
        assert group in result["phases"][2]["summary"], result["phases"][2]
    assert all(row["need"] == "covered" for row in scaffold["sites"])
