"""A second model whose RMSNorm differs from Flux's: QwenImage uses diffusers' own RMSNorm.

On an NPU host (real or emulated) diffusers calls torch_npu.npu_rms_norm itself, so scaffold must say the sites are
already fused. In a plain CPU process diffusers traces its manual chain instead — add.Tensor with the unrounded
Python eps, mean over [-1], and in bf16 a cast to the weight dtype *between* the rsqrt multiply and the weight
multiply — and scaffold generates from that chain: a pattern in fp32, a GraphPatternEntry carrier in bf16 (the
mid-chain cast is registered as prims.convert_element_type by register_replacement from torch 2.12 on, so no pattern
can contain it there; before 2.12 a pattern can, and the entry is the user's choice).

Plain-CPU runs need their own process (diffusers decides once per process whether it is on an NPU host), so they go
through the CLI."""

from __future__ import annotations

import json

import pytest
from scaffold_helpers import lint, passed_count, py_compile, run_generated_tests

from sdcompile.core.torchcompat.behaviours import holds

QWEN_SITES = {
    "txt_norm", "transformer_blocks.0.attn.norm_q", "transformer_blocks.0.attn.norm_k",
    "transformer_blocks.0.attn.norm_added_q", "transformer_blocks.0.attn.norm_added_k",
}


@pytest.mark.slow
def test_qwenimage_on_an_npu_host_is_already_fused_by_diffusers(target, tmp_path):
    from sdcompile.phases.scaffold.phase import scaffold

    result = scaffold(model="qwenimage", op="rmsnorm", repo=target, workdir=tmp_path / "ws", force=True)
    assert result.decision == "already fused" and result.gate == "pass"
    assert {r.site for r in result.sites} == QWEN_SITES
    for row in result.sites:
        assert row.need == "fused by the model"
        assert row.production.left == ("npu.npu_rms_norm.default",)
    assert result.files == () and result.variants == ()
    assert any("--plain-cpu" in step for step in result.next_steps)
    # phases 3 and 4 act on that decision from their own commands, as `run` does: nothing to register or verify
    from sdcompile.phases.register.phase import register
    from sdcompile.phases.verify.phase import run_verify
    from sdcompile.workspace.store import Workspace

    registered = register(target, "qwenimage", "rmsnorm", workdir=tmp_path / "ws")
    assert (registered.skipped, registered.outcome, registered.files) == ("already fused", "nothing to register", ())
    verified = run_verify(repo=target, workdir=tmp_path / "ws", model="qwenimage", op="rmsnorm")
    assert (verified.skipped, verified.passed, verified.groups) == ("already fused", True, ())
    phases = Workspace(tmp_path / "ws").load_pair("qwenimage", "rmsnorm").phases
    assert phases["register"].verdict == phases["verify"].verdict == "skipped"
    # and integrate reads the record: the same fused launches on both sides are then the model's own, a pass
    from sdcompile.phases.integrate.phase import _fused_by_model

    assert _fused_by_model(tmp_path / "ws", "qwenimage", "rmsnorm")
    assert not _fused_by_model(tmp_path / "ws", "flux", "rmsnorm")  # no record: nothing known


@pytest.mark.slow
def test_qwenimage_plain_cpu_fp32_pattern_generated_from_diffusers_chain(target, tmp_path, cli):
    ws = str(tmp_path / "ws")
    run = cli("scaffold", "--model", "qwenimage", "--op", "rmsnorm", "--plain-cpu", "--dtype", "fp32",
              "--repo", str(target), "--workdir", ws, "--json")
    assert run.exit_code == 0, run.stderr[-3000:]
    result = json.loads(run.stdout)
    assert result["device"] == "cpu" and result["decision"] == "generate"
    assert {r["site"] for r in result["sites"] if r["check"]["hit"]} == QWEN_SITES
    # one pattern for the 4-D qk norms and the 3-D txt_norm: nothing in the chain depends on the rank
    [variant] = result["variants"]
    assert variant["implementation"] == "normalization.RMSNorm"
    assert variant["constants"] == [{"name": "epsilon", "graph_value": 1e-06, "spelled": "1e-06",
                                     "fp32_rounded": False}]  # the graph holds the Python float
    assert "add = torch.ops.aten.add.Tensor(mean, _epsilon)" in variant["chain"]
    assert "mean = torch.ops.aten.mean.dim(pow_, [-1], True)" in variant["chain"]
    assert variant["trimmed"] == []

    pattern = target / "mindiesd/compilation/patterns/qwenimage_rmsnorm_pattern.py"
    test_file = "tests/compilation/patterns/test_qwenimage_rmsnorm_pattern.py"
    assert lint(pattern, target / test_file).returncode == 0, lint(pattern, target / test_file).stdout
    assert py_compile(pattern, target / test_file).returncode == 0
    assert "    _epsilon = epsilon\n" in pattern.read_text()  # the graph holds the Python float: no float32 rounding

    assert cli("register", "--model", "qwenimage", "--op", "rmsnorm", "--repo", str(target), "--workdir", ws,
               ).exit_code == 0
    proc = run_generated_tests(target, test_file, "--sdcompile-device", "plain-cpu")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert passed_count(proc.stdout) == len(QWEN_SITES) + 2  # + the model test and the numerics check


@pytest.mark.slow
def test_qwenimage_plain_cpu_bf16_needs_a_graph_pattern_entry_and_gets_one(target, tmp_path, cli):
    ws = str(tmp_path / "ws")
    first = cli("scaffold", "--model", "qwenimage", "--op", "rmsnorm", "--plain-cpu", "--repo", str(target),
                "--workdir", ws, "--json", "--dry-run")
    result = json.loads(first.stdout)
    if holds("decomposition-override"):  # torch >= 2.12: the mid-chain cast is registered as prims
        # no pattern can hold the chain, so --path auto takes a GraphPatternEntry and says why
        assert first.exit_code == 0, first.stderr[-2000:]
        assert result["decision"] == "generate" and [f["kind"] for f in result["files"]] == [
            "graph entries", "graph entries test"]
        assert all(row["need"] == "graph-entry" for row in result["sites"])
        (choice,) = result["paths"]
        assert choice["path"] == "graph-entry" and choice["why"]["code"] == "auto-entry"
        refusal = choice["why"]["facts"]["refusal"]
        assert refusal["code"] == "inner-op" and "aten._to_copy.default" in refusal["facts"]["inner"], refusal
    else:  # registered as written, the pattern path can hold the cast; the entry is still there to choose
        assert first.exit_code == 0, first.stderr[-2000:]
        assert result["decision"] == "generate" and [f["status"] for f in result["files"]] == ["would create"] * 2
    assert not result["backend_diff"]

    made = cli("scaffold", "--model", "qwenimage", "--op", "rmsnorm", "--plain-cpu", "--path", "graph-entry",
               "--repo", str(target), "--workdir", ws, "--json")
    assert made.exit_code == 0, made.stderr[-3000:]
    result = json.loads(made.stdout)
    assert {r["site"] for r in result["sites"] if r["check"]["hit"]} == QWEN_SITES
    carrier = target / "mindiesd/compilation/patterns/qwenimage_rmsnorm_pattern.py"
    test_file = "tests/compilation/patterns/test_qwenimage_rmsnorm_pattern.py"
    assert lint(carrier, target / test_file).returncode == 0, lint(carrier, target / test_file).stdout
    assert py_compile(carrier, target / test_file).returncode == 0
    # the whole chain, the mid-chain cast included, is in the carrier's table, as the pattern pass meets it
    assert "(torch.ops.aten._to_copy.default, (_Node(5),), {'dtype': dtype})" in carrier.read_text()
    assert not (target / "mindiesd/compilation/passes/qwenimage_rmsnorm_pass.py").exists()

    backend = target / "mindiesd/compilation/mindie_sd_backend.py"
    before = backend.read_bytes()
    assert cli("register", "--model", "qwenimage", "--op", "rmsnorm", "--repo", str(target), "--workdir", ws,
               ).exit_code == 0
    assert backend.read_bytes() == before  # the carrier is registered, never called from the backend
    proc = run_generated_tests(target, test_file, "--sdcompile-device", "plain-cpu")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    # each site module, and the model
    assert passed_count(proc.stdout) == len(QWEN_SITES) + 1
