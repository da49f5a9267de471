"""The numerics gate: scaffold runs each generated replacement against its own search function before writing it.
A chain that transforms the norm weight first (a zero-centred RMSNorm's `weight + 1`) is rebound to the
transformed value, so the generated pattern computes what the model does; a chain no binding fixes is refused
with why; verify names the input when a replacement is wrong anyway."""

from __future__ import annotations

from pathlib import Path

import pytest
from scaffold_helpers import passed_count, run_generated_tests

from sdcompile.phases.scaffold.render import reason_text
from sdcompile.phases.scaffold.results import Why

DATA = Path(__file__).parent / "data" / "transformed_weights.py"
PATTERN = "mindiesd/compilation/patterns/tw_rmsnorm_pattern.py"
TEST = "tests/compilation/patterns/test_tw_rmsnorm_pattern.py"


def _rms(x, w, eps=1e-6):
    import torch

    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def test_a_transformed_input_is_found_by_values_and_an_ignored_one_by_perturbation():
    import torch

    from sdcompile.testing.input_transforms import find_input_transform, ignored_inputs, traced_values
    from sdcompile.testing.numerics import compare

    gen = torch.Generator().manual_seed(0)
    x, w = torch.randn(2, 4, 16, generator=gen), 0.1 * torch.randn(16, generator=gen)

    def search(x, w):
        return _rms(x, w.float() + 1)

    def raw(x, w):  # the fused op given the stored weight as it is
        return _rms(x, w)

    expected = search(x, w)
    assert not compare(raw(x, w), expected).passed
    nodes = traced_values(search, [x, w], ["x", "w"])
    found = find_input_transform(nodes, ["x", "w"], [x, w], raw, expected, compare)
    assert found is not None and found.role == "w" and found.numerics.passed
    assert any(step.startswith("aten.add.Tensor(") for step in found.steps), found.steps

    def twice(x, w):  # no value of w alone makes one application equal two
        return _rms(x, w) * w

    nodes = traced_values(twice, [x, w], ["x", "w"])
    assert find_input_transform(nodes, ["x", "w"], [x, w], raw, twice(x, w), compare) is None

    def modulate(x, scale, shift):
        return x * (1 + scale) + shift

    def drops_shift(x, scale, shift):
        return x * (1 + scale)

    s = torch.randn(2, 1, 16, generator=gen)
    assert ignored_inputs(modulate, drops_shift, [x, s, s.clone()], ["x", "scale", "shift"]) == (
        ("shift", "replacement"),)


@pytest.mark.slow
@pytest.mark.parametrize("factory", ["zero_centered", "qwenimage21_text_norm"])
def test_a_zero_centred_norm_is_generated_with_the_weight_rebound(factory, target, tmp_path, cli):
    from sdcompile.phases.scaffold.phase import scaffold

    ws = tmp_path / "ws"
    result = scaffold(model_file=f"{DATA}:{factory}", name="tw", op="rmsnorm", dtype="bf16,fp32", repo=target,
                      workdir=ws)
    assert result.decision == "generate" and result.gate == "pass", result.decision_reason
    assert result.numerics and all(n.passed for n in result.numerics)
    assert {n.dtype for n in result.numerics} == {"bf16", "fp32"}
    for v in result.variants:
        (role, var), = v.bound
        assert role == "weight" and f"npu_rms_norm(x, {var}.to(x.dtype)" in v.replacement
        assert f"{var} = torch.ops.aten.add.Tensor(" in v.replacement  # recomputed from the weight first
    source = (target / PATTERN).read_text()
    assert "npu_rms_norm(x, weight," not in source
    if factory != "zero_centered":
        return
    guide = (Path(__file__).parents[2] / "docs/pattern-templates.md").read_text()
    for line in v.replacement.split("; "):  # the guide's example is this very replacement
        assert line in guide, line
    registered = cli("register", "--model", "tw", "--op", "rmsnorm", "--repo", str(target), "--workdir", str(ws))
    assert registered.exit_code == 0, registered.stderr
    proc = run_generated_tests(target, TEST)
    assert proc.returncode == 0 and passed_count(proc.stdout) == 5, proc.stdout[-3000:]

    # The generated test's numerics check fails on the replacement scaffold would have written without the gate.
    (target / PATTERN).write_text(source.replace(f"npu_rms_norm(x, {var}.to(x.dtype)", "npu_rms_norm(x, weight"))
    proc = run_generated_tests(target, TEST, "-k", "replacement_matches_search_function")
    assert proc.returncode == 1 and "1 failed" in proc.stdout, proc.stdout[-3000:]

    # verify sees every site matched and names the input, pointing at the pattern file rather than at debug.
    verified = cli("verify", "--model-file", f"{DATA}:{factory}", "--op", "rmsnorm", "--group",
                   "TwRmsNormPatternGroup", "--dtype", "fp32", "--repo", str(target), "--workdir", str(ws),
                   )
    said = " ".join((verified.stdout + verified.stderr).split())  # as one line, whatever the wrapping
    assert verified.exit_code == 1, said
    assert "the replacement takes weight as it comes; the search function computes aten.add.Tensor(" in said
    assert f"fix the replacement in {PATTERN}" in said


@pytest.mark.slow
def test_a_chain_no_binding_fixes_is_refused_with_why(target, tmp_path):
    from sdcompile.phases.scaffold.phase import scaffold

    result = scaffold(model_file=f"{DATA}:squared_gain", name="tw", op="rmsnorm", dtype="bf16", repo=target,
                      workdir=tmp_path / "ws")
    assert result.decision == "cannot generate" and result.gate == "fail"
    (row,) = result.sites
    assert row.need == "cannot generate"
    facts = row.reason.facts
    assert row.reason.code == Why.NUMERICS and facts["dtypes"] == ["bf16"], row.reason
    assert facts["error"] is None and facts["transform_role"] is None and not facts["ignored"]  # nothing explains it
    assert "no single input transform explains it" in reason_text(row.reason)
    assert "docs/pattern-templates.md" in reason_text(row.reason)
    assert not result.files and not (target / PATTERN).exists()
    assert [n.passed for n in result.numerics] == [False]


@pytest.mark.slow
def test_a_graph_pass_binding_a_transformed_weight_is_refused(target, tmp_path):
    """A gain computed at run time stays `gain + 1` in the frozen graph (a parameter's would be folded into one
    constant by freeze(), which the pass then binds correctly)."""
    from sdcompile.phases.scaffold.phase import scaffold

    result = scaffold(model_file=f"{DATA}:conditioned_gain", name="tw", op="rmsnorm", dtype="fp32",
                      path="graph-pass", repo=target, workdir=tmp_path / "ws")
    assert result.gate == "fail" and not result.files
    refused = [r.reason for r in result.sites if r.reason.code == Why.NUMERICS]
    assert refused and all(r.facts["transform_role"] == "weight" and r.facts["path"] == "graph-pass" for r in refused)
    assert all(any(step.startswith("aten.add.Tensor(") for step in r.facts["transform"]) for r in refused), refused
    assert "docs/custom-graph-pass.md" in reason_text(refused[0])
