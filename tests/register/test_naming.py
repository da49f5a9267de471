import pytest

from sdcompile.core.target.naming import registration_names, validate_flag, validate_group, validate_module
from sdcompile.core.target.registry import read_target_registry
from sdcompile.util.errors import EXIT_BAD_INPUT, BadInput


@pytest.mark.parametrize(
    ("model", "op", "flag", "group", "module"),
    [
        ("flux", "rmsnorm", "enable_flux_rmsnorm", "FluxRmsNormPatternGroup", "flux_rmsnorm_pattern"),
        ("qwenimage", "rmsnorm", "enable_qwenimage_rmsnorm", "QwenImageRmsNormPatternGroup",
         "qwenimage_rmsnorm_pattern"),
        # upstream's own spellings come out of the catalog's words
        ("wan", "rmsnorm", "enable_wan_rmsnorm", "WanRmsNormPatternGroup", "wan_rmsnorm_pattern"),
        ("minimax_h3", "adaln", "enable_minimax_h3_adaln", "MiniMaxH3AdaLnPatternGroup", "minimax_h3_adaln_pattern"),
        ("wan", "residual_gate", "enable_wan_residual_gate", "WanResidualGatePatternGroup",
         "wan_residual_gate_pattern"),
    ],
)
def test_names_derived_from_model_and_op(model, op, flag, group, module):
    names = registration_names(model, op)
    assert (names.flag, names.group, names.module, names.derived) == (flag, group, module, True)
    assert names.pattern_filename == f"{module}.py"
    assert names.import_module == f".{module}"


def test_explicit_names_override_each_derived_one():
    names = registration_names("flux", "rmsnorm", group="FluxQkNormPatternGroup", module="flux_qk_norm_pattern.py")
    assert names.flag == "enable_flux_rmsnorm"
    assert names.group == "FluxQkNormPatternGroup"
    assert names.module == "flux_qk_norm_pattern"  # ".py" accepted and dropped
    assert not names.derived


def test_all_three_explicit_names_need_no_model_or_op():
    names = registration_names(None, None, flag="enable_x_y", group="XYPatternGroup", module="x_y_pattern")
    assert names.flag == "enable_x_y"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"model": "Flux", "op": "rmsnorm"}, "--model 'Flux' cannot form"),
        ({"model": "flux-2", "op": "rmsnorm"}, "--model 'flux-2' cannot form"),
        ({"model": "flux", "op": "rms norm"}, "--op 'rms norm' cannot form"),
        ({"model": "flux", "op": None}, "need --model and --op"),
        ({"model": "flux", "op": "rmsnorm", "flag": "flux_rmsnorm"}, "enable_<model>_<op>"),
        ({"model": "flux", "op": "rmsnorm", "flag": "enable_Flux"}, "enable_<model>_<op>"),
        ({"model": "flux", "op": "rmsnorm", "group": "FluxRmsNorm"}, "PatternGroup"),
        ({"model": "flux", "op": "rmsnorm", "group": "fluxRmsNormPatternGroup"}, "PatternGroup"),
        ({"model": "flux", "op": "rmsnorm", "module": "flux_rmsnorm"}, "_pattern"),
        ({"model": "flux", "op": "rmsnorm", "module": "patterns/flux_rmsnorm_pattern.py"}, "not a path"),
        ({"model": "flux", "op": "rmsnorm", "module": "Flux_pattern"}, "_pattern"),
    ],
)
def test_names_breaking_the_rules_are_bad_input(kwargs, match):
    kwargs = {"model": None, "op": None, **kwargs}
    with pytest.raises(BadInput, match=match) as info:
        registration_names(kwargs.pop("model"), kwargs.pop("op"), **kwargs)
    assert info.value.exit_code == EXIT_BAD_INPUT and info.value.fix


def test_every_upstream_name_passes_the_validators(mindiesd_tree):
    """The rules must accept what MindIE-SD 3.1.0 itself registers (RMSNormPatternGroup, GELUPatternGroup, ...)."""
    from sdcompile.core.target.discovery import find_target

    reg = read_target_registry(find_target(mindiesd_tree))
    for group in reg.groups:
        assert validate_flag(group.flag) == group.flag
        assert validate_group(group.group) == group.group
        assert validate_module(group.source_module.lstrip(".")) == group.source_module.lstrip(".")
