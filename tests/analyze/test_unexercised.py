"""Primitives the source holds and the recorded forward did not run: analyze names the line, the condition and the
input that would reach it (core/zoo/unexercised.py), and says nothing where everything ran."""

from __future__ import annotations

import ast
import linecache
from pathlib import Path

import pytest

from sdcompile.phases.analyze.phase import analyze
from sdcompile.phases.analyze.render import unexercised_text, verdict
from sdcompile.workspace.artifacts import read_artifact

MODEL = Path(__file__).resolve().parent / "data" / "unexercised_model.py"


def _line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if line.strip() == text)


def _report(result, op):
    return next(r for r in result.ops if r.op == op)


def test_rope_behind_tables_left_out_is_named_with_its_line_and_argument(tmp_path):
    result = analyze(model_file=f"{MODEL}:build", op="rope", workdir=tmp_path)
    assert result.gate == "fail" and result.missing == ("rope",)
    (report,) = result.ops
    assert not report.present
    (item,) = report.unexercised
    q_line = _line_of(MODEL, "q = apply_rope(q, rope)")
    assert (item.op, item.line, item.lines) == ("rope", q_line, (q_line, q_line + 1))
    assert item.file == str(MODEL) and item.code == "q = apply_rope(q, rope)"
    assert (item.function, item.matched_by, item.not_run) == ("RopeBlock.forward", "function apply_rope*", "")
    assert (item.guard, item.guard_kind, item.guard_holds, item.guard_ran) == ("rope is not None", "if", True, True)
    assert item.guard_line == _line_of(MODEL, "if rope is not None:")
    assert (item.argument, item.argument_given, item.argument_value) == ("rope", False, "None")
    text = unexercised_text(item, result.model_class)
    assert f"unexercised_model.py:{q_line} `q = apply_rope(q, rope)`" in text
    assert "`rope` is also a forward argument of RopeBlock, which these inputs leave out (default None): pass it" \
        in text
    assert "RoPE present in the source but not run by these inputs: see above" in verdict(result).text
    doc = read_artifact("analysis", tmp_path / report.analysis)  # the pair's analysis.json carries them
    assert [(u["line"], u["argument"]) for u in doc["analysis"]["unexercised"]] == [(q_line, "rope")]


def test_a_flag_set_at_construction_is_named_with_its_value(tmp_path):
    result = analyze(model_file=f"{MODEL}:build", op="gelu", workdir=tmp_path)
    (item,) = _report(result, "gelu").unexercised
    assert item.line == _line_of(MODEL, 'h = nn.functional.gelu(h, approximate="tanh")')
    assert (item.guard, item.matched_by, item.argument) == ("self.tanh_gelu", "calls gelu", None)
    assert (item.setting, item.setting_value) == ("self.tanh_gelu", "False")


def test_with_the_tables_passed_rope_is_located_and_nothing_is_unexercised(tmp_path):
    result = analyze(model_file=f"{MODEL}:build_with_rope", op="rope", workdir=tmp_path)
    (report,) = result.ops
    assert result.gate == "pass" and report.present
    assert [i.name for i in report.implementations] == ["unexercised_model.apply_rope"]
    assert report.unexercised == ()
    assert "not run" not in verdict(result).text


@pytest.mark.torch_independent  # which lines of diffusers' source ran decides it, not torch
def test_allegro_rope_tables_not_synthesized_are_named(tmp_path):
    """AllegroTransformer3DModel takes its RoPE tables from the pipeline; its synthesized inputs leave them out."""
    result = analyze(model="AllegroTransformer3DModel", op="rope", workdir=tmp_path)
    assert result.gate == "fail" and result.missing == ("rope",)
    (item,) = result.ops[0].unexercised
    assert item.file == "diffusers/models/attention_processor.py"
    assert item.function == "AllegroAttnProcessor2_0.__call__"
    assert item.code.startswith("query = apply_rotary_emb_allegro(query, ")
    assert len(item.lines) == 2  # query's and key's
    assert item.guard.startswith("image_rotary_emb is not None") and item.guard_ran and item.guard_holds
    assert (item.argument, item.argument_given, item.argument_value) == ("image_rotary_emb", False, "None")
    import diffusers.models.attention_processor as processors

    assert linecache.getline(processors.__file__, item.line).strip() == item.code
    assert "`image_rotary_emb` is also a forward argument of AllegroTransformer3DModel" in \
        unexercised_text(item, result.model_class)


def test_flux_runs_every_primitive_its_source_holds(flux_analysis):
    result, _ = flux_analysis
    assert [(r.op, r.unexercised) for r in result.ops] == [(op, ()) for op in ("rmsnorm", "rope", "adaln", "gelu")]


@pytest.mark.parametrize("name", ["wan", "qwenimage", "ltx", "cogvideox"])
def test_zoo_models_that_run_everything_have_no_unexercised_primitive(name):
    """No false positives: the source scan on models whose forward runs every primitive call it reaches."""
    from sdcompile.core.npu.device import activate_for_command
    from sdcompile.core.zoo.locate import locate
    from sdcompile.core.zoo.models import build_model
    from sdcompile.core.zoo.runtrace import trace_forward
    from sdcompile.core.zoo.unexercised import unexercised

    activate_for_command(False)
    built = build_model(name, "bf16")
    trace = trace_forward(built.module, built.inputs)
    assert unexercised(trace, built.module, built.inputs, ("rmsnorm", "rope", "adaln", "gelu"), locate(trace, type(
        built.module))) == {}


@pytest.mark.torch_independent
def test_guards_are_innermost_first_with_elif_early_exits_and_boolean_operands():
    from sdcompile.core.zoo.guards import GuardKind, guards_of, parents

    source = (
        "def f(x, mask=None, rope=None):\n"
        "    if mask is None:\n"
        "        return x\n"
        "    if x.ndim == 3:\n"
        "        pass\n"
        "    elif rope is not None:\n"
        "        y = rope and apply_rope(x, rope)\n"
        "    return x\n"
    )
    fn = ast.parse(source).body[0]
    call = next(n for n in ast.walk(fn) if isinstance(n, ast.Call) and n.func.id == "apply_rope")
    found = [(g.kind, g.test, g.holds, g.line) for g in guards_of(call, fn, parents(fn))]
    assert found == [
        (GuardKind.AND, "rope", True, 7),
        (GuardKind.IF, "rope is not None", True, 6),
        (GuardKind.IF, "x.ndim == 3", False, 4),
        (GuardKind.EARLY_EXIT, "mask is None", False, 2),
    ]
