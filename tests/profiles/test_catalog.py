"""The kernel catalog is data a user extends with --catalog FILE."""

from __future__ import annotations

import json

from profile_recount import DATA

from sdcompile.core.profiles.catalog import load_catalog


def test_op_type_from_names():
    cat = load_catalog()
    assert cat.op_type_from_name("aclnnInplaceCopy_TensorMoveAiCore_TensorMove") == "TensorMove"
    assert cat.op_type_from_name("aclnnMatmul_MatMulV3Common_MatMulV3") == "MatMulV3"
    assert cat.op_type_from_name("LayerNorm90") == "LayerNorm"
    assert cat.op_type_from_name("FastGeluV2") == "FastGeluV2"  # a digit that belongs to the type stays
    assert cat.op_type_from_name("triton_poi_fused_0") == "triton_poi_fused_0"
    c = cat.classify("aclnnInplaceCopy_CastAiCore_Cast", None)
    assert (c.op_type, c.family) == ("Cast", "cast_via_inplace_copy")
    assert cat.classify("aclnnIndexPutImpl_IndexPutAiCpu_IndexPut", "IndexPut").family == "ai_cpu"
    assert cat.classify("foo", "Mul", "AI_CPU").family == "ai_cpu"
    assert cat.classify("aclnnInplaceCopy_ViewCopyAiCore_ViewCopy", "ViewCopy").rule.startswith("Type in")
    assert cat.classify("triton_poi_fused_0", None).family == "triton"
    assert cat.resolve_op("adln").name == "adaln" and cat.resolve_op("FastGelu").name == "gelu"


def test_user_catalog_adds_a_copy_family_and_an_op(tmp_path, cli):
    user = tmp_path / "mine.toml"
    user.write_text(
        '[[family]]\nname = "my_copies"\ntitle = "Gelu counted as copy (test)"\nrole = "copy"\n'
        '[[family.rule]]\nlabel = "Type Gelu"\ntypes = ["Gelu"]\n\n'
        '[[op]]\nname = "myneg"\naliases = ["negate"]\nfused_types = ["Neg"]\neager_chain = ["Mul"]\n'
        'signature = ["Mul"]\n\n'
        '[[op]]\nname = "myslice"\nfused_types = ["StridedSlice"]\neager_chain = ["Pows"]\nsignature = ["Pows"]\n'
    )
    eager, compiled = str(DATA / "full_step" / "eager"), str(DATA / "full_step" / "compile")
    base = json.loads(cli("copy-audit", eager, compiled, "--json").stdout)
    res = cli("copy-audit", eager, compiled, "--catalog", str(user), "--json")
    assert res.exit_code == 0, res.stderr
    doc = json.loads(res.stdout)
    gelu_per_side = 6  # one Gelu per layer, three layers, two steps, on both sides
    assert doc["compile_copies"]["copy"]["count"] == base["compile_copies"]["copy"]["count"] + gelu_per_side
    assert "Type Gelu" in {r["rule"] for r in doc["compile_copies"]["by_rule"]}
    assert doc["catalog"] == ["built-in", str(user)]
    # Neg runs once per layer on both sides (6 -> 6) while Mul halves: a chain that shrank without the fused kernel
    # growing is not this op's replacement
    res = cli("integrate", eager, compiled, "--catalog", str(user), "--op", "negate", "--json")
    check = json.loads(res.stdout)["op_check"]
    assert res.exit_code == 1
    assert (check["op"], check["fused_eager"], check["fused_compile"]) == ("myneg", 6, 6)
    assert (check["verdict"], check["outcome"]) == ("fail", "chain shrank alone") and "grew" not in check["reason"]
    res = cli("integrate", eager, compiled, "--catalog", str(user), "--op", "myslice", "--json")
    check = json.loads(res.stdout)["op_check"]
    assert (check["fused_eager"], check["fused_compile"], check["chain_drop"]) == (0, 6, 6)
    assert check["verdict"] == "pass" and "appeared: StridedSlice 0 -> 6 (+6)" in check["reason"]
