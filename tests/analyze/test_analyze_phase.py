"""The analyze phase end to end, in process: flux compiled once for the module."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from sdcompile.phases.analyze.phase import analyze
from sdcompile.phases.analyze.render import npu_note_text, reason_text
from sdcompile.phases.analyze.results import Held, Holder, TensorSource, Why
from sdcompile.util.errors import BadInput
from sdcompile.util.serialize import dumps
from sdcompile.workspace.store import Workspace

HANDWRITTEN = Path(__file__).resolve().parent / "data" / "handwritten_model.py"


@pytest.fixture
def flux(flux_analysis):
    return flux_analysis


def _impl(result, op, name):
    report = next(r for r in result.ops if r.op == op)
    return next(i for i in report.implementations if i.name == name)


def test_every_primitive_is_present_with_sources_sites_and_parameter_source(flux):
    result, _ = flux
    assert result.gate == "pass" and result.missing == ()
    assert [r.op for r in result.ops] == ["rmsnorm", "rope", "adaln", "gelu"]
    for report in result.ops:
        assert report.present and report.implementations
        for impl in report.implementations:
            assert impl.site_count == len(impl.sites) > 0
            assert impl.source.split(":")[1].split("-")[0].isdigit()
            assert impl.decision.parameter_source in ("module attribute", "function input")
            assert all(site.aten_nodes > 0 for site in impl.sites), impl.name
            if impl.decision.parameter_source == "module attribute":
                assert impl.tensors and impl.evidence, impl.name
    assert result.device in ("cpu (emulated npu)", "npu", "cpu")


def test_flux_rmsnorm_weight_is_a_placeholder_at_the_pattern_stage_and_get_attr_after_freezing(flux):
    result, _ = flux
    rms = _impl(result, "rmsnorm", "torch.nn.RMSNorm")
    d = rms.decision
    assert (d.parameter_source, d.path, d.stage) == ("module attribute", "replacement",
                                                     "graph_rewrite_before_freezing")
    assert d.why.code == Why.LIFTED and d.why.facts["tensor"] in {t.tensor for t in rms.tensors}
    norm_q = next(t for t in rms.tensors if t.tensor == "transformer_blocks.0.attn.norm_q.weight")
    assert norm_q.kind == "parameter"
    assert norm_q.before.holder is Holder.PLACEHOLDER and norm_q.before.node.startswith("arg")
    assert norm_q.after.holder is Holder.GET_ATTR and norm_q.after.target.startswith("_frozen_param")
    assert any(e.startswith("before_freezing:") and "placeholder" in e for e in rms.evidence)
    assert any(e.startswith("after_freezing:") and "get_attr _frozen_param" in e for e in rms.evidence)
    assert rms.npu_note is None  # torch.nn.RMSNorm has no torch_npu branch in diffusers


def test_flux_rope_and_adaln_are_fed_by_function_inputs(flux):
    result, _ = flux
    rope = _impl(result, "rope", "embeddings.apply_rotary_emb")
    assert rope.decision.parameter_source == "function input" and rope.tensors == ()
    assert rope.decision.path == "replacement"
    zero = _impl(result, "adaln", "normalization.AdaLayerNormZero")
    assert zero.decision.parameter_source == "function input"
    assert "transformer_blocks.0.norm1.linear.weight" in zero.child_tensors  # only its child Linear has weights


def test_workspace_has_analysis_snippets_subgraphs_dumps_and_phase_records(flux):
    result, workdir = flux
    ws = Workspace(workdir)
    for report in result.ops:
        doc = json.loads((workdir / report.analysis).read_text())
        assert doc["op"] == report.op and doc["analysis"]["present"] is True
        state = ws.load_pair("flux", report.op)
        rec = state.phases["analyze"]
        assert rec.verdict == "pass" and rec.device == result.device
        assert report.analysis in rec.evidence
        for impl in report.implementations:
            source = (workdir / impl.snippet).read_text()
            ast.parse(source)  # the snippet is valid Python: header comments + verbatim source
            assert f"# {report.op}: {impl.name}" in source
            assert "aten." in (workdir / impl.subgraphs).read_text()
    rms_snippet = (workdir / _impl(result, "rmsnorm", "torch.nn.RMSNorm").snippet).read_text()
    assert "class RMSNorm(Module):" in rms_snippet and "F.rms_norm" in rms_snippet
    subgraphs = (workdir / _impl(result, "rmsnorm", "torch.nn.RMSNorm").subgraphs).read_text()
    assert "aten.rsqrt.default" in subgraphs and "_frozen_param" in subgraphs
    assert (workdir / result.capture.folder / "graph0.before_freezing.txt").is_file()
    assert result.capture.prepare_freezing and result.capture.parameters_before_freezing[1] == 0
    assert result.capture.note.code == Why.CAPTURED


def test_inline_snippet_marks_the_lines_computing_the_primitive(flux):
    result, workdir = flux
    inline = _impl(result, "adaln", "transformer_flux.FluxTransformerBlock.forward (inline)")
    assert inline.kind == "inline" and inline.primitive_lines
    text = (workdir / inline.snippet).read_text()
    assert f"# lines computing the adaln: {inline.primitive_lines}" in text
    assert "(1 + scale_mlp[:, None])" in text


def test_result_is_one_json_document(flux):
    result, _ = flux
    doc = json.loads(dumps(result))
    assert doc["model"] == "flux" and doc["ops"][0]["implementations"][0]["decision"]["path"]


def test_requested_absent_op_fails_the_gate_without_compiling(tmp_path):
    result = analyze(model="sd3", op="rope", workdir=tmp_path)
    assert result.gate == "fail" and result.missing == ("rope",)
    (report,) = result.ops
    assert not report.present and report.note.code == Why.ABSENT and "no RoPE ran" in reason_text(report.note)
    assert result.capture.graphs == 0 and "capture" not in result.timings
    assert Workspace(tmp_path).load_pair("sd3", "rope").phases["analyze"].verdict == "fail"


def test_bad_op_and_dtype_are_bad_input(tmp_path):
    with pytest.raises(BadInput):
        analyze(model="flux", op="layernorm", workdir=tmp_path)
    with pytest.raises(BadInput):
        analyze(model="flux", dtype="int8", workdir=tmp_path)


def test_geglu_npu_note_names_the_fused_op_and_the_package_gate(tmp_path):
    from sdcompile.core.npu.device import current

    result = analyze(model_file=f"{HANDWRITTEN}:build_geglu", op="gelu", workdir=tmp_path)
    (report,) = result.ops
    geglu = next(i for i in report.implementations if i.name == "activations.GEGLU")
    note = geglu.npu_note
    assert note.fused_ops == ("npu_geglu",) and note.gate == "is_torch_npu_available"
    assert "package presence" in note.gate_meaning and "not by the device" in note.gate_meaning
    assert note.gate_meaning in npu_note_text(note)
    if current().model_sees_npu:
        assert note.taken_at == note.of_sites == 1
        assert geglu.form.startswith("GEGLU")
    else:
        assert note.taken_at == 0


def test_a_model_torch_compile_cannot_trace_is_still_analyzed_without_graphs(tmp_path):
    result = analyze(model_file=f"{HANDWRITTEN}:build_uncompilable", op="rmsnorm", workdir=tmp_path)
    assert result.gate == "pass" and result.capture.graphs == 0
    assert result.capture.note.code == Why.NO_GRAPHS and "torch.compile failed" in result.capture.note.facts["backend"]
    (impl,) = result.ops[0].implementations
    assert impl.name == "handwritten_model.MyRMSNorm" and impl.snippet
    (site,) = impl.sites
    assert site.aten_nodes == 0 and site.note.code == Why.NOT_CAPTURED
    assert reason_text(site.note).startswith("not captured: torch.compile failed")
    assert impl.tensors[0].before.holder is Holder.NOT_CAPTURED
    assert impl.decision.path == "replacement" and impl.decision.why.code == Why.CAPTURE_FAILED
    assert "recipe's rule applies" in reason_text(impl.decision.why)


def test_a_forward_that_fails_on_its_example_inputs_is_bad_input(tmp_path):
    with pytest.raises(BadInput) as err:
        analyze(model_file=f"{HANDWRITTEN}:build_wrong_inputs", workdir=tmp_path)
    assert "the model's forward raised TypeError" in err.value.message


def test_a_tensor_absent_from_a_captured_graph_is_not_read_as_a_failed_capture():
    """A module tensor the implementation reads that is in no graph of a successful capture (only values computed
    from it are) takes the register_replacement path, its inputs bound to the values computed from it; a failed
    capture takes it by the recipe's rule, unchecked, and says so."""
    import torch

    from sdcompile.core.graph.capture import capture_graphs
    from sdcompile.phases.analyze.path_decision import decide as _decide

    capture = capture_graphs(torch.nn.RMSNorm(16).to(torch.bfloat16), {"x": torch.randn(2, 16, dtype=torch.bfloat16)})
    assert capture.graphs
    absent = TensorSource("norm.table", "tensor attribute", "Norm.forward line 3", Held(Holder.ABSENT),
                          Held(Holder.ABSENT))
    decision = _decide((absent,), capture)
    assert (decision.parameter_source, decision.path) == ("module attribute", "replacement")
    assert decision.why.code == Why.UNBOUND
    assert "does not appear as a graph input or constant" in reason_text(decision.why)
    # the same tensor when nothing was captured: the recipe's rule, said so
    not_captured = TensorSource("norm.table", "tensor attribute", "Norm.forward line 3", Held(Holder.NOT_CAPTURED),
                                Held(Holder.NOT_CAPTURED))
    fallback = _decide((not_captured,), capture)
    assert fallback.path == "replacement" and fallback.why.code == Why.CAPTURE_FAILED
    assert "no graph was captured" in reason_text(fallback.why)


def test_by_default_the_capture_stops_where_the_pattern_pass_matches_and_says_how_to_see_freeze(tmp_path):
    """Without --after-freezing the capture ends at the graph the pattern pass sees: the same path decision as with
    freeze() (taken on that graph alone), every after-freezing fact marked not frozen, none of them invented."""
    from io import StringIO

    from rich.console import Console

    from sdcompile.core.graph.stages import STAGE_AFTER_FREEZING, STAGE_BEFORE_FREEZING
    from sdcompile.phases.analyze.render import render_analyze

    model = f"{HANDWRITTEN}:build"
    plain = analyze(model_file=model, op="rmsnorm", workdir=tmp_path / "plain")
    frozen = analyze(model_file=model, op="rmsnorm", workdir=tmp_path / "frozen", after_freezing=True)
    assert STAGE_BEFORE_FREEZING in plain.capture.stages and STAGE_AFTER_FREEZING not in plain.capture.stages
    assert STAGE_AFTER_FREEZING in frozen.capture.stages
    assert plain.capture.parameters_after_freezing is None
    assert plain.capture.parameters_before_freezing == frozen.capture.parameters_before_freezing
    assert frozen.capture.parameters_after_freezing is not None
    pairs = list(zip(plain.ops[0].implementations, frozen.ops[0].implementations, strict=True))
    assert any(impl.tensors for impl, _ in pairs)
    for impl, frozen_impl in pairs:
        assert impl.name == frozen_impl.name and impl.decision.path == frozen_impl.decision.path
        assert impl.decision.why.code == frozen_impl.decision.why.code
        assert all(t.after.holder is Holder.NOT_FROZEN for t in impl.tensors)
        assert all(t.after.holder is not Holder.NOT_FROZEN for t in frozen_impl.tensors)
        assert [t.before for t in impl.tensors] == [t.before for t in frozen_impl.tensors]
        assert not any(e.startswith("after_freezing:") for e in impl.evidence)
    lifted = next(impl for impl, _ in pairs if impl.decision.why.code == Why.LIFTED)
    assert "--after-freezing" in reason_text(plain.capture.note)
    assert "--after-freezing" in reason_text(lifted.decision.why)
    out = StringIO()
    render_analyze(Console(file=out, width=200, color_system=None), plain)
    assert "--after-freezing" in out.getvalue() and "_frozen_param" not in out.getvalue()
