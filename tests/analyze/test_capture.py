"""Graph capture at the stages MindieSDBackend sees: real torch.compile with aot_autograd and freeze()."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest
import torch

from sdcompile.core.graph.capture import (
    STAGE_AFTER_FREEZING,
    STAGE_AFTER_PATTERNS,
    STAGE_AOT,
    STAGE_BEFORE_FREEZING,
    STAGE_DYNAMO,
    capture_graphs,
)
from sdcompile.core.graph.nodes import fqn_from_source_path, frames, module_path, op_name
from sdcompile.core.zoo.models import build_model, resolve_model

NORM_Q = "transformer_blocks.0.attn.norm_q"
HANDWRITTEN = Path(__file__).resolve().parent / "data" / "handwritten_model.py"


def _by_origin(stage, name):
    return [n for n, o in stage.origins.items() if o.name == name]


def test_flux_stages_and_metadata(flux_capture):
    meta = flux_capture.metadata
    assert meta.stages == (STAGE_DYNAMO, STAGE_AOT, STAGE_BEFORE_FREEZING, STAGE_AFTER_FREEZING)
    assert meta.graph_count == 1 and meta.decompositions == 0
    assert meta.torch_version == torch.__version__ and meta.diffusers_version
    assert meta.device in ("cpu (emulated npu)", "npu", "cpu")


def test_parameters_are_placeholders_before_freezing_and_get_attr_after(flux_capture):
    graph = flux_capture.graphs[0]
    before, after = graph.stages[STAGE_BEFORE_FREEZING], graph.stages[STAGE_AFTER_FREEZING]
    assert before.count("get_attr") == 0
    (name,) = _by_origin(before, f"{NORM_Q}.weight")
    assert before.node(name).op == "placeholder"
    assert before.origins[name].kind == "parameter"
    frozen = after.node(name)  # freeze() keeps the node name and makes it a constant
    assert frozen.op == "get_attr" and str(frozen.target).startswith("_frozen_param")
    assert after.origins[name].name == f"{NORM_Q}.weight"
    # only the user inputs stay graph inputs after freezing
    assert {o.kind for o in after.origins.values() if o.kind not in ("parameter", "folded constant")} == {"input"}
    assert after.count("placeholder") == len(flux_capture.graphs[0].stages[STAGE_DYNAMO].origins) - sum(
        1 for o in graph.stages[STAGE_DYNAMO].origins.values() if o.kind == "parameter")


def test_nodes_map_back_to_submodules_and_source_lines(flux_capture):
    before = flux_capture.graphs[0].stages[STAGE_BEFORE_FREEZING]
    rsqrts = [n for n in before.nodes if op_name(n) == "aten.rsqrt.default"]
    paths = {module_path(n) for n in rsqrts}
    assert NORM_Q in paths and "single_transformer_blocks.0.attn.norm_k" in paths
    first = next(n for n in rsqrts if module_path(n) == NORM_Q)
    files = [f.file for f in frames(first)]
    assert any(f.endswith("transformer_flux.py") for f in files)
    assert frames(first)[-1].function == "rms_norm"  # torch.nn.RMSNorm -> F.rms_norm


def test_stage_text_and_dump_have_stable_names(flux_capture, tmp_path):
    paths = flux_capture.dump(tmp_path)
    names = {p.name for p in paths}
    assert {"graph0.dynamo.txt", "graph0.aot.txt", "graph0.before_freezing.txt", "graph0.after_freezing.txt",
            "capture.json"} == names
    text = (tmp_path / "graph0.after_freezing.txt").read_text()
    assert "# stage: after_freezing" in text and "_frozen_param" in text
    assert f"parameter {NORM_Q}.weight" in text
    summary = json.loads((tmp_path / "capture.json").read_text())
    assert summary["metadata"]["prepare_freezing"] is True
    assert summary["graphs"][0]["stages"]["aot"]["get_attr"] == 0


def test_compiled_output_matches_eager(flux_bf16, flux_capture):
    with torch.no_grad():
        eager = flux_bf16.module(**flux_bf16.inputs)[0]
    torch.testing.assert_close(flux_capture.output[0].float(), eager.float(), atol=2e-2, rtol=2e-2)


@pytest.fixture(scope="module")
def handwritten():
    return build_model(resolve_model(model_file=f"{HANDWRITTEN}:build"), "fp32")


def test_without_prepare_freezing_parameters_stay_placeholders_after_freeze(handwritten):
    # The finding behind prepare_freezing: on this torch dynamo lifts parameters into inputs, so freeze()
    # has no params to turn into constants.
    bare = capture_graphs(handwritten.module, handwritten.inputs, prepare_freezing=False)
    after = bare.graphs[0].stages[STAGE_AFTER_FREEZING]
    (name,) = _by_origin(after, "q_norm.weight")
    assert after.node(name).op == "placeholder"
    prepared = capture_graphs(handwritten.module, handwritten.inputs)
    after = prepared.graphs[0].stages[STAGE_AFTER_FREEZING]
    (name,) = _by_origin(after, "q_norm.weight")
    assert after.node(name).op == "get_attr"


def test_pattern_pass_hook_adds_a_stage_and_sees_the_before_freezing_graph(handwritten):
    seen = []

    def count_gelu(gm):
        seen.append(sum(1 for n in gm.graph.nodes if op_name(n) == "aten.gelu.default"))

    cap = capture_graphs(handwritten.module, handwritten.inputs, pattern_pass=count_gelu, freezing=False)
    assert seen == [1]
    assert STAGE_AFTER_PATTERNS in cap.graphs[0].stages and STAGE_AFTER_FREEZING not in cap.graphs[0].stages
    assert cap.metadata.pattern_pass.endswith("count_gelu")


def test_graph_breaks_give_one_captured_graph_each():
    class Broken(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)

        def forward(self, x):
            x = self.a(x).relu()
            torch._dynamo.graph_break()
            return self.b(x)

    cap = capture_graphs(Broken(), {"x": torch.randn(2, 4)})
    assert cap.metadata.graph_count == 2
    assert [g.index for g in cap.graphs] == [0, 1]
    assert all(STAGE_AFTER_FREEZING in g.stages for g in cap.graphs)


def _scaled(x):
    return x * 2


class _Routed(torch.nn.Module):
    """Two graph breaks dynamo names (a dynamic-shape op, a data-dependent .item()) and, in `gathered`, code it gives
    up on without naming a break (a generator it cannot trace)."""

    def __init__(self, gathered: bool = False):
        super().__init__()
        self.a, self.gathered = torch.nn.Linear(4, 4), gathered

    def forward(self, x):
        y = _scaled(self.a(x).relu())
        if self.gathered:
            return _scaled(self.a(y)) + sum(v.sum().item() for v in x.unbind(0))
        counts = torch.bincount((x[:, 0] > 0).long())
        y = y * counts.sum()
        if x.sum().item() > 0:
            y = y + 1
        return self.a(y)


def _line_of(text: str) -> int:
    lines, start = inspect.getsourcelines(_Routed.forward)
    return start + next(i for i, line in enumerate(lines) if text in line)


def test_graph_breaks_are_read_off_each_graph_with_the_models_line_and_torchs_warning_held(capfd):
    cap = capture_graphs(_Routed(), {"x": torch.randn(8, 4)})
    assert cap.metadata.graph_count == 3
    assert [(b.reason.split()[0], b.line, b.code, b.count) for b in cap.breaks] == [
        ("Dynamic", _line_of("bincount"), "counts = torch.bincount((x[:, 0] > 0).long())", 1),
        ("Unsupported", _line_of(".item() > 0"), "if x.sum().item() > 0:", 1)]
    assert all(b.file.endswith("tests/analyze/test_capture.py") for b in cap.breaks)
    assert [g.ended_by is not None for g in cap.graphs] == [True, True, False]  # the last ends at the return
    assert cap.untraced == ()  # both reasons are named breaks
    assert "Graph break" not in capfd.readouterr().err  # sdcompile says it, with the line; torch's hint held


def test_code_dynamo_gives_up_on_without_a_break_is_said():
    cap = capture_graphs(_Routed(gathered=True), {"x": torch.randn(8, 4)})
    assert cap.breaks == () and cap.metadata.graph_count == 1  # one graph, yet the forward ran mostly eagerly
    assert any("Tensor.item()" in reason for reason in cap.untraced), cap.untraced
    assert not any(reason.startswith("SKIPPED INLINING") for reason in cap.untraced)


def test_work_done_only_for_logs_that_are_off_is_skipped_and_changes_no_graph(handwritten, monkeypatch):
    """dynamo tokenizes each traced source file to name functions in trace-log headers, and probes each graph's
    guard latency after flushing the cache, whether or not those logs are on; the capture leaves both out and
    gets the same graphs (source comments included), then puts dynamo's functions back."""
    import contextlib

    import torch._dynamo.funcname_cache as funcname_cache
    import torch._dynamo.guards as guards
    import torch._dynamo.symbolic_convert as symbolic_convert

    from sdcompile.core.torchcompat import dynamo as compat

    tokenized: list[str] = []
    probed: list[int] = []
    real_add_file, real_probe = funcname_cache._add_file, guards.profile_guard_manager
    monkeypatch.setattr(funcname_cache, "_add_file", lambda f: (tokenized.append(f), real_add_file(f))[1])
    monkeypatch.setattr(guards, "profile_guard_manager", lambda *a: (probed.append(1), real_probe(*a))[1])
    funcname_cache.clearcache()
    names, probe = symbolic_convert.get_funcname, guards.profile_guard_manager
    skipped = capture_graphs(handwritten.module, handwritten.inputs)
    assert tokenized == [] and probed == []
    assert symbolic_convert.get_funcname is names and guards.profile_guard_manager is probe

    monkeypatch.setattr(compat, "no_unlogged_probes", contextlib.nullcontext)
    done = capture_graphs(handwritten.module, handwritten.inputs)
    assert tokenized and probed, "without the skip dynamo tokenizes the model's source and probes its guards"
    for ours, theirs in zip(skipped.graphs, done.graphs, strict=True):
        assert {s: g.text for s, g in ours.stages.items()} == {s: g.text for s, g in theirs.stages.items()}
    assert "# File:" in skipped.graphs[0].stages[STAGE_AOT].text


@pytest.mark.parametrize("path, expected", [
    ("L['self'].__dict__['_modules']['transformer_blocks'].0.attn.norm_q", NORM_Q),
    ("L['self'].transformer_blocks[0].attn", "transformer_blocks.0.attn"),
    ("L['self']._modules['x_embedder']", "x_embedder"),
    ("L['self']", ""),
])
def test_module_paths_from_dynamo_sources(path, expected):
    assert fqn_from_source_path(path) == expected


@pytest.mark.slow
def test_redundant_node_elimination_matches_the_targets_own_pass(mindiesd_tree):
    import importlib

    from sdcompile.core.target.discovery import find_target
    from sdcompile.core.target.loader import load_target

    load_target(find_target(mindiesd_tree))
    upstream = importlib.import_module("mindiesd.compilation.passes.redundant_node_elimination_pass")
    built = build_model("wan", "bf16")
    ours = capture_graphs(built.module, built.inputs, freezing=False)
    theirs = capture_graphs(built.module, built.inputs, freezing=False,
                            redundant_node_elimination=upstream.ReduandantNodeEliminationPass())
    a = ours.graphs[0].stages[STAGE_BEFORE_FREEZING]
    b = theirs.graphs[0].stages[STAGE_BEFORE_FREEZING]
    aot = ours.graphs[0].stages[STAGE_AOT]
    assert a.count("call_function") < aot.count("call_function")  # the rules did remove something
    assert [op_name(n) for n in a.nodes] == [op_name(n) for n in b.nodes]
    assert theirs.metadata.redundant_node_elimination.endswith("ReduandantNodeEliminationPass")
