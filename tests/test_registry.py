import pytest

from sdcompile.core.target.discovery import find_target
from sdcompile.core.target.registry import read_target_registry
from sdcompile.util.errors import BadInput

# The registry order of mindiesd 3.1.0's passes/__init__.py, as published.
UPSTREAM_ORDER = [
    ("enable_rms_norm", "RMSNormPatternGroup"),
    ("enable_rope", "RopePatternGroup"),
    ("enable_adalayernorm", "AdaLayerNormPatternGroup"),
    ("enable_fast_gelu", "GELUPatternGroup"),
    ("enable_mul_add", "MulAddPatternGroup"),
    ("enable_wan_adalayernorm", "WanAdaLayerNormPatternGroup"),
    ("enable_norm_out_adaln", "NormOutAdaLayerNormPatternGroup"),
    ("enable_wan_rope", "WanRopePatternGroup"),
    ("enable_minimax_h3_rope", "MiniMaxH3RopePatternGroup"),
    ("enable_qwen_rope", "QwenRopePatternGroup"),
    ("enable_wan_residual_gate", "WanResidualGatePatternGroup"),
    ("enable_wan_rmsnorm", "WanRmsNormPatternGroup"),
    ("enable_minimax_h3_gate", "MiniMaxH3GatePatternGroup"),
    ("enable_minimax_h3_adaln", "MiniMaxH3AdaLnPatternGroup"),
    ("enable_minimax_h3_swiglu", "MiniMaxH3SwigluPatternGroup"),
    ("enable_minimax_h3_rmsnorm", "MiniMaxH3RmsNormPatternGroup"),
]


def test_real_registry_order_flags_and_exports(mindiesd_tree):
    reg = read_target_registry(find_target(mindiesd_tree))
    assert [(g.flag, g.group) for g in reg.groups] == UPSTREAM_ORDER
    assert [g.position for g in reg.groups] == list(range(1, 17))
    assert all(g.flag_declared and g.flag_default is True for g in reg.groups)
    assert all(g.exported for g in reg.groups)
    pattern_files = (mindiesd_tree / "mindiesd/compilation/patterns").glob("*_pattern.py")
    assert {g.pattern_file for g in reg.groups} == {f"mindiesd/compilation/patterns/{p.name}" for p in pattern_files}
    qwen = next(g for g in reg.groups if g.group == "QwenRopePatternGroup")
    assert "wan_residual_gate" in qwen.comment  # upstream's ordering lesson is carried along


def test_flag_defaults_read_without_import(mindiesd_tree):
    cfg = mindiesd_tree / "mindiesd/compilation/compiliation_config.py"
    cfg.write_text(cfg.read_text().replace("enable_fast_gelu: bool = True", "enable_fast_gelu: bool = False"))
    reg = read_target_registry(find_target(mindiesd_tree))
    assert next(g for g in reg.groups if g.flag == "enable_fast_gelu").flag_default is False


def test_registry_that_is_not_a_dict_literal_is_rejected(mindiesd_tree):
    passes = mindiesd_tree / "mindiesd/compilation/passes/__init__.py"
    text = passes.read_text()
    start = text.index("pattern_registry = {")
    end = text.index("}\n", start) + 2
    passes.write_text(text[:start] + "pattern_registry = dict(load_registry())\n" + text[end:])
    with pytest.raises(BadInput, match="not a dict literal"):
        read_target_registry(find_target(mindiesd_tree))
