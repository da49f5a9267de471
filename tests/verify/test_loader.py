"""Loading the real MindIE-SD tree under the emulated NPU, and sessions that do not leak into each other."""

import dataclasses
import logging
import sys
from pathlib import Path

import pytest
import torch

from sdcompile.core.target.discovery import find_target
from sdcompile.core.target.loader import load_target, loaded_target

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "npu"))  # npu_processes: fresh-process helpers

GROUPS_3_1_0 = (
    "RMSNormPatternGroup", "RopePatternGroup", "AdaLayerNormPatternGroup", "GELUPatternGroup", "MulAddPatternGroup",
    "WanAdaLayerNormPatternGroup", "NormOutAdaLayerNormPatternGroup", "WanRopePatternGroup",
    "MiniMaxH3RopePatternGroup", "QwenRopePatternGroup", "WanResidualGatePatternGroup", "WanRmsNormPatternGroup",
    "MiniMaxH3GatePatternGroup", "MiniMaxH3AdaLnPatternGroup", "MiniMaxH3SwigluPatternGroup",
    "MiniMaxH3RmsNormPatternGroup",
)


def test_all_sixteen_pattern_modules_load_under_emulation(target, module_tree):
    assert target.package == "stand-in" and target.device.label == "cpu (emulated npu)"
    assert target.compilation_ok
    modules = {m.module.rsplit(".", 1)[-1]: m for m in target.pattern_modules}
    assert len(modules) == 16 and all(m.ok for m in modules.values()), [m for m in modules.values() if not m.ok]
    assert tuple(g.group for g in target.groups) == GROUPS_3_1_0  # registry order
    assert [g.position for g in target.groups] == list(range(1, 17))
    assert all(g.loaded and g.patterns for g in target.groups)
    compilation = sys.modules["mindiesd.compilation.mindie_sd_backend"]
    assert compilation.__file__.startswith(str(module_tree))  # the tree's own file, unmodified


def test_the_layer_functions_patterns_call_are_the_trees_own(target, module_tree):
    import mindiesd
    import mindiesd.layers
    from mindiesd.layers.scale_shift import swiglu

    layers = module_tree / "mindiesd" / "layers"
    assert mindiesd.__path__ == [str(module_tree / "mindiesd")]
    assert all(m.ok for m in target.layers) and {m.module.rsplit(".", 1)[-1] for m in target.layers} == {
        "adalayernorm", "muls_add", "residual_gate_add", "rope", "scale_shift"}
    assert mindiesd.rotary_position_embedding.__code__.co_filename == str(layers / "rope.py")
    assert mindiesd.layers.rotary_position_embedding is mindiesd.rotary_position_embedding
    assert mindiesd.layernorm_scale_shift.__code__.co_filename == str(layers / "adalayernorm.py")
    for name in ("muls_add", "residual_gate_add", "scale_shift"):
        assert sys.modules[f"mindiesd.layers.{name}"].__file__ == str(layers / f"{name}.py")
    assert sys.modules["mindiesd.layers._custom_ops"].__file__ == str(layers / "_custom_ops.py")
    assert swiglu(torch.randn(1, 2, 8)).shape == (1, 2, 4)
    norm = torch.nn.LayerNorm(8, eps=1e-6)
    x3, scale, shift = torch.randn(2, 4, 8), torch.randn(2, 8), torch.randn(2, 8)
    torch.testing.assert_close(mindiesd.layernorm_scale_shift(norm, x3, scale, shift, fused=True),
                               mindiesd.layernorm_scale_shift(norm, x3, scale, shift, fused=False),
                               rtol=1e-5, atol=1e-5)
    with pytest.raises(AttributeError, match="stand-in package for mindiesd/__init__.py"):
        mindiesd.attention_forward  # noqa: B018 - NPU-only API is not served


def test_only_the_catalogued_npu_only_files_are_stood_in(target):
    from sdcompile.core.npu.emulation.mindiesd_standins import standin_catalog

    standins = standin_catalog()
    assert [s.module for s in standins] == ["mindiesd", "mindiesd.layers", "mindiesd.layers.register_ops"]
    ours = sorted(name for name, m in sys.modules.items()
                  if name.startswith("mindiesd") and getattr(m, "sdcompile_standin", None) is not None)
    assert ours == sorted(s.module for s in standins)  # everything else under mindiesd comes from the tree
    others = [m for name, m in sys.modules.items() if name.startswith("mindiesd.") and name not in ours]
    assert others and all(str(target.tree.package) in (m.__file__ or "") for m in others)
    for s in standins:
        assert s.file in target.package_note  # what verify prints as the target line


def test_muls_add_runs_its_npu_kernel_and_its_fallback_means_the_same(target):
    import mindiesd.layers

    from sdcompile.core.npu.emulation.tree_ops import tree_fallback

    g = torch.Generator().manual_seed(3)
    x, y = (torch.randn(64, 64, generator=g).bfloat16() for _ in range(2))
    out = mindiesd.layers.muls_add(x, y, 0.3)
    assert out.dtype == torch.bfloat16
    # the NPU branch: the Triton kernel multiplies by the fp32 scalar in fp32 and rounds once, on store
    assert torch.equal(out, (x.float() * 0.3 + y.float()).bfloat16())
    with tree_fallback():
        meant = mindiesd.layers.muls_add(x, y, 0.3)
    assert torch.equal(meant, x * 0.3 + y)  # the tree's fallback: bf16 ops, rounded after each
    assert not torch.equal(out, meant)  # close, not identical: one rounding against two


def test_a_replacement_runs_the_trees_layer_code(target, module_tree):
    """Profile compiling and running: the backend's passes and the fused op's Python are the tree's files."""
    class AddScaled(torch.nn.Module):
        def forward(self, x, y):
            return x * 1.0 + y

    x, y = torch.randn(4, 8, dtype=torch.bfloat16), torch.randn(4, 8, dtype=torch.bfloat16)
    with torch.no_grad(), target.session(["MulAddPatternGroup"]) as s:
        compiled = torch.compile(AddScaled(), backend=s.backend(), dynamic=False)
        compiling = set()
        sys.setprofile(lambda frame, event, arg: compiling.add(frame.f_code.co_filename) if event == "call" else None)
        try:
            compiled(x, y)
        finally:
            sys.setprofile(None)
        assert s.replacements == 1
        executed = set()
        sys.setprofile(lambda frame, event, arg: executed.add(frame.f_code.co_filename) if event == "call" else None)
        try:
            out = compiled(x, y)
        finally:
            sys.setprofile(None)
    assert str(module_tree / "mindiesd/layers/muls_add.py") in executed
    assert any(f.endswith("triton/runtime/interpreter.py") for f in executed)  # its Triton kernel, interpreted
    assert not any(f.endswith("sdcompile/core/npu/emulation/kernels.py") for f in executed)  # no re-implementation
    # the backend's own redundant-node pass ran on the graph, from the tree (not sdcompile.core.graph.redundant_nodes)
    assert str(module_tree / "mindiesd/compilation/passes/redundant_node_elimination_pass.py") in compiling
    assert not any(f.endswith("sdcompile/core/graph/redundant_nodes.py") for f in compiling)
    assert torch.equal(out, x * 1.0 + y)


def test_an_npu_host_that_cannot_import_the_target_stops_unless_asked_for_reference_ops(module_tree, tmp_path):
    from npu_processes import make_fake_real_stack, run_python

    stack = make_fake_real_stack(tmp_path / "stack")  # a torch_npu that claims a device; mindiesd's .so cannot load
    code = f"""
        from sdcompile.util.errors import EnvironmentMissing
        from sdcompile.core.npu.device import activate
        from sdcompile.core.target.discovery import find_target
        from sdcompile.core.target.loader import load_target
        print(activate("npu").label)
        try:
            target = load_target(find_target({str(module_tree)!r}))
        except EnvironmentMissing as exc:
            print("EnvironmentMissing", exc.exit_code, exc.one_line())
        else:
            print(target.package, target.package_note)
    """
    stopped = run_python(code, env={"PYTHONPATH": str(stack)})
    assert stopped.stdout.startswith("npu\nEnvironmentMissing 3 "), stopped.stderr
    assert "this NPU host cannot import the target's mindiesd package" in stopped.stdout
    assert "SDCOMPILE_CPU_REFERENCE_OPS=1" in stopped.stdout
    asked = run_python(code, env={"PYTHONPATH": str(stack), "SDCOMPILE_CPU_REFERENCE_OPS": "1"})
    assert asked.stdout.startswith("npu\nstand-in the real mindiesd package failed to import"), asked.stderr
    assert "mindiesd/layers/register_ops.py" in asked.stdout and "over the real torch_npu" in asked.stdout


def test_session_enables_only_its_groups_and_restores_the_config(target):
    config = sys.modules["mindiesd.compilation.compiliation_config"].CompilationConfig
    before = dataclasses.asdict(config.fusion_patterns)
    with target.session(["MulAddPatternGroup"]) as s:
        flags = dataclasses.asdict(config.fusion_patterns)
        assert [k for k, v in flags.items() if v] == ["enable_mul_add"]
        s.activate()
        assert set(s.pattern_entries()) == {"MulAddPattern-torch.bfloat16-1.0"}
    assert dataclasses.asdict(config.fusion_patterns) == before
    with target.session(["enable_wan_rmsnorm"]) as s:  # by flag; nothing of the previous session is left
        s.activate()
        assert set(s.pattern_entries()) == set(target.group("WanRmsNormPatternGroup").patterns)
        patterns = sys.modules["mindiesd.compilation.passes.register_pattern_to_pass"].patterns
        assert set(patterns.pattern_replacements) == set(s.pattern_entries())


def test_a_session_skips_dynamos_unlogged_probes_and_puts_them_back(target):
    import torch._dynamo.guards as guards
    import torch._dynamo.symbolic_convert as symbolic_convert

    before = (guards.profile_guard_manager, symbolic_convert.get_funcname)
    with target.session(["MulAddPatternGroup"]):
        assert guards.profile_guard_manager is not before[0] and guards.profile_guard_manager() == 0.0
        assert symbolic_convert.get_funcname is not before[1]
    assert (guards.profile_guard_manager, symbolic_convert.get_funcname) == before


def test_session_counts_replacements_and_captures_the_pass_log_line(target, capsys):
    class AddScaled(torch.nn.Module):
        def forward(self, x, y):
            return x * 1.0 + y

    x, y = torch.randn(4, 8, dtype=torch.bfloat16), torch.randn(4, 8, dtype=torch.bfloat16)
    logger = logging.getLogger("mindie-sd")
    level = logger.level
    with torch.no_grad(), target.session(["MulAddPatternGroup"]) as s:
        out = torch.compile(AddScaled(), backend=s.backend(), dynamic=False)(x, y)
        assert s.replacements == 1 and s.pass_log_counts == [1]
        assert dict(s.hits_by_pattern) == {"MulAddPattern-torch.bfloat16-1.0": 1}
        assert s.graphs[0].before.op_counts()["aten.mul.Tensor"] == 1
        assert s.graphs[0].after.op_counts() == {"mindiesd.muls_add.default": 1}
    torch.testing.assert_close(out, x * 1.0 + y)
    assert logger.level == level
    assert "MindIE" not in capsys.readouterr().out  # the target's log never reaches stdout


def test_a_pattern_module_that_fails_to_import_is_reported_and_the_rest_load(mindiesd_tree):
    broken = mindiesd_tree / "mindiesd/compilation/patterns/gelu_pattern.py"
    lines = broken.read_text().splitlines()
    broken.write_text("\n".join([*lines, 'raise RuntimeError("broken on purpose")']) + "\n")
    target = load_target(find_target(mindiesd_tree))
    modules = {m.module.rsplit(".", 1)[-1]: m for m in target.pattern_modules}
    assert not modules["gelu_pattern"].ok
    assert modules["gelu_pattern"].error == (
        f"RuntimeError: broken on purpose (mindiesd/compilation/patterns/gelu_pattern.py:{len(lines) + 1})")
    package = next(m for m in target.modules if m.module == "mindiesd.compilation.patterns")
    assert not package.ok and "broken on purpose" in package.error  # its __init__ imports every module
    gelu = target.group("GELUPatternGroup")
    assert not gelu.loaded and "broken on purpose" in gelu.error
    assert sum(g.loaded for g in target.groups) == 15
    with target.session(["WanRmsNormPatternGroup"]) as s:  # the others still register and run
        s.activate()
        assert s.pattern_entries()


def test_a_stale_target_refuses_to_run(target, mindiesd_tree):
    other = load_target(find_target(mindiesd_tree))
    assert loaded_target() is other
    with pytest.raises(RuntimeError, match="no longer the loaded target"):
        target.session(["MulAddPatternGroup"])


def test_an_edited_tree_is_imported_again(mindiesd_tree):
    first = load_target(find_target(mindiesd_tree))
    assert load_target(find_target(mindiesd_tree)) is first  # unchanged: cached
    pattern = mindiesd_tree / "mindiesd/compilation/patterns/mul_add_pattern.py"
    pattern.write_text(pattern.read_text().replace("create(torch.bfloat16)]", "create(torch.bfloat16), "
                                                   "create(torch.float32)]"))
    second = load_target(find_target(mindiesd_tree))
    assert second is not first
    assert second.group("MulAddPatternGroup").patterns == ("MulAddPattern-torch.bfloat16-1.0",
                                                             "MulAddPattern-torch.float32-1.0")
