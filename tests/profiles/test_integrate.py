"""integrate from profiles and logs: the kernel diff equals a csv-module recount; the three layers' verdicts."""

from __future__ import annotations

import json

import pytest
from profile_recount import DATA, VARIANTS, recount

from sdcompile.phases.integrate.phase import run_integrate

LOG_OK = """\
2025-06-01 10:10:10,001 [MindIE-SD] [DEBUG] PatternMatchPass replace 3 patterns.
2025-06-01 10:10:11,002 [MindIE-SD] [DEBUG] Patterns registered for replacement:
2025-06-01 10:10:12,003 [MindIE-SD] [DEBUG] PatternMatchPass replace 2 patterns.
[INFO] E2E generation done in 41.2 s
"""
LOG_CRASH = """\
2025-06-01 10:10:10,001 [MindIE-SD] [DEBUG] PatternMatchPass replace 0 patterns.
Traceback (most recent call last):
  File "run.py", line 10, in <module>
RuntimeError: NPU out of memory
"""


@pytest.mark.parametrize("variant", VARIANTS)
def test_rmsnorm_diff_on_every_variant(variant):
    eager, compiled = DATA / variant / "eager", DATA / variant / "compile"
    report = run_integrate(eager, compiled, op="rms_norm")
    e, c = recount(eager), recount(compiled)
    assert set(report.diff.eager_only) == set(e.by_name) - set(c.by_name)
    assert set(report.diff.compile_only) == set(c.by_name) - set(e.by_name)
    for row in report.diff.by_name:
        ec, eu = e.by_name.get(row.key, [0, 0])
        cc, cu = c.by_name.get(row.key, [0, 0])
        assert (row.eager_count, row.compile_count) == (ec, cc)
        assert row.delta_us == pytest.approx(float(cu - eu), rel=1e-9, abs=1e-9)
    impacts = [abs(r.delta_us) for r in report.diff.by_name]
    assert impacts == sorted(impacts, reverse=True)
    oc = report.op_check
    assert oc.fused_eager == e.by_type.get("RmsNorm", [0])[0] == 0
    assert oc.fused_compile == c.by_type["RmsNorm"][0] > 0
    assert oc.signature_eager == sum(e.by_type.get(t, [0])[0] for t in ("Pows", "ReduceMean", "Rsqrt"))
    assert oc.signature_compile == 0
    assert oc.verdict == "pass"
    layers = {x.number: x.verdict for x in report.layers}
    assert layers == {1: "skipped", 2: "pass", 3: "skipped"}
    assert report.verdict == "incomplete"


def test_an_op_the_compiled_run_lacks_fails_layer_two():
    report = run_integrate(DATA / "full_old" / "eager", DATA / "full_old" / "compile", op="RotaryMul")
    assert report.op == "rope"
    assert report.op_check.verdict == "fail" and "no RotaryMul" in report.op_check.reason
    assert report.verdict == "fail"


def test_unchanged_fused_kernel_fails():
    side = DATA / "full_old" / "compile"  # RmsNorm present on both sides, nothing shrank
    report = run_integrate(side, side, op="rmsnorm")
    assert report.op_check.verdict == "fail" and "changed nothing" in report.op_check.reason


def test_all_three_layers_from_profiles_and_log(tmp_path, cli):
    log = tmp_path / "compile.log"
    log.write_text(LOG_OK)
    eager, compiled = str(DATA / "full_step" / "eager"), str(DATA / "full_step" / "compile")
    res = cli("integrate", eager, compiled, "--op", "rmsnorm", "--log", str(log),
              "--done-marker", "E2E generation done", "--json")
    assert res.exit_code == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["verdict"] == "pass"
    assert [x["verdict"] for x in doc["layers"]] == ["pass", "pass", "pass"]
    assert doc["log"]["hits"] == {"lines": 2, "total": 5, "per_graph": [3, 2]}
    assert doc["device"] == "npu"
    # without a completion marker nothing confirms the run finished
    res = cli("integrate", eager, compiled, "--op", "rmsnorm", "--log", str(log), "--json")
    assert json.loads(res.stdout)["layers"][2]["verdict"] == "unconfirmed" and res.exit_code == 0


def test_crashed_run_fails_layers_one_and_three(tmp_path, cli):
    log = tmp_path / "compile.log"
    log.write_text(LOG_CRASH)
    res = cli("integrate", "--log", str(log), "--json")
    assert res.exit_code == 1
    layers = json.loads(res.stdout)["layers"]
    assert "0 replacement(s)" in layers[0]["detail"] and "RuntimeError: NPU out of memory" in layers[2]["detail"]
    report = run_integrate(None, None, log=log)
    assert [x.verdict for x in report.layers] == ["fail", "skipped", "fail"]


def test_workspace_records_the_verdict(tmp_path, cli):
    eager, compiled = str(DATA / "level0_short" / "eager"), str(DATA / "level0_short" / "compile")
    log = tmp_path / "run.log"
    log.write_text("nothing logged at DEBUG\n")  # with --log, layers 1 and 3 come from it, not from a model run
    res = cli("integrate", eager, compiled, "--op", "rmsnorm", "--model", "flux", "--workdir", str(tmp_path),
              "--log", str(log))
    assert res.exit_code == 0, res.stderr
    state = json.loads((tmp_path / "flux" / "rmsnorm" / "state.json").read_text())
    rec = state["phases"]["integrate"]
    assert rec["verdict"] == "info" and "layer 2 kernel diff: pass" in rec["summary"]
    assert json.loads((tmp_path / "flux" / "rmsnorm" / "integrate.json").read_text())["op"] == "rmsnorm"


def test_a_name_launched_as_several_op_types_lists_them_all(tmp_path):
    for side, extra in (("eager", ""), ("compile", "aten::copy_,Cast,CPU,1.0\t,2.0\r\n")):
        path = tmp_path / side / "kernel_details.csv"
        path.parent.mkdir()
        path.write_bytes(("Name,Type,Accelerator Core,Start Time(us),Duration(us)\r\n"
                          "aten::copy_,ViewCopy,CPU,0.5\t,1.0\r\n" + extra).encode())
    report = run_integrate(tmp_path / "eager", tmp_path / "compile")
    row = next(r for r in report.diff.by_name if r.key == "aten::copy_")
    assert (row.op_type, row.family) == ("Cast/ViewCopy", "cast_via_inplace_copy/copy")
    assert (row.eager_count, row.compile_count, row.delta_us) == (1, 2, 2.0)


def _side(path, rows: list[tuple]):
    """kernel_details.csv with torch_npu's shape columns: (Name, Type, Input Data Types[, Input Shapes]) per launch."""
    path.mkdir(parents=True)
    lines = ["Name,Type,Accelerator Core,Start Time(us),Duration(us),Input Shapes,Input Data Types"]
    for k, (name, op_type, dtypes, *shapes) in enumerate(rows):
        shape = (shapes or ["1,8,2,8;8,1,8"])[0]
        lines.append(f'{name},{op_type},AI_VECTOR_CORE,{10.0 * k:.3f}\t,2.000,"""{shape}""",{dtypes}')
    (path / "kernel_details.csv").write_bytes(("\r\n".join(lines) + "\r\n").encode())


def test_a_complex_rope_chain_is_told_by_its_mul_on_complex_inputs(tmp_path):
    """Complex RoPE (x as complex pairs times cos + i sin) launches no Neg: its chain is a Mul whose inputs are
    complex, which the Input Data Types column tells from every layer's real Muls."""
    real_mul = ("aclnnMul_MulAiCore_Mul", "Mul", "FLOAT;FLOAT")
    complex_mul = ("aclnnMul_MulAiCore_Mul", "Mul", "COMPLEX64;COMPLEX64")
    rotary = ("aclnnRotaryPositionEmbedding", "RotaryPositionEmbedding", "FLOAT;FLOAT;FLOAT")
    _side(tmp_path / "eager", [real_mul, complex_mul, complex_mul, real_mul] * 3)
    _side(tmp_path / "compile", [real_mul, rotary, rotary, real_mul] * 3)
    _side(tmp_path / "kept", [real_mul, rotary, rotary, complex_mul, complex_mul, real_mul] * 3)

    report = run_integrate(tmp_path / "eager", tmp_path / "compile", op="rope")
    oc = report.op_check
    assert "Mul on complex inputs" in oc.signature
    assert (oc.fused_eager, oc.fused_compile, oc.signature_eager, oc.signature_compile) == (0, 6, 6, 0)
    assert oc.verdict == "pass", oc.reason

    kept = run_integrate(tmp_path / "eager", tmp_path / "kept", op="rope").op_check
    assert kept.verdict == "fail" and "dropped by 0 chain(s)" in kept.reason  # fused kernels added, chain stayed


def test_a_rotation_matrix_rope_chain_is_told_by_its_muls_on_rank_five_inputs(tmp_path):
    """HiDream's rotation matrices (F[..., 0] * x0 + F[..., 1] * x1) launch neither a Neg nor a complex Mul: its
    Muls take [..., D/2, 2]-shaped pairs, a rank (5+) the Input Shapes column tells from other layers' Muls."""
    real_mul = ("aclnnMul_MulAiCore_Mul", "Mul", "FLOAT;FLOAT", "1,88,64;1,1,64")
    pair_mul = ("aclnnMul_MulAiCore_Mul", "Mul", "FLOAT;FLOAT", "1,88,1,4,2;1,88,4,4,1")
    rotary = ("aclnnRotaryPositionEmbedding", "RotaryPositionEmbedding", "FLOAT;FLOAT;FLOAT", "1,88,4,8;1,88,1,8")
    _side(tmp_path / "eager", [real_mul, pair_mul, pair_mul, real_mul] * 2)
    _side(tmp_path / "compile", [real_mul, rotary, real_mul] * 2)
    oc = run_integrate(tmp_path / "eager", tmp_path / "compile", op="rope").op_check
    assert "Mul on rank-5+ inputs" in oc.signature
    assert (oc.fused_compile, oc.signature_eager, oc.signature_compile, oc.verdict) == (2, 4, 0, "pass"), oc.reason
