"""docs/pattern-templates.md carries the fused-op reference generated from the catalogs, and scaffold's recipes name
fused ops the emulated NPU really provides, called the way they are exposed."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_pattern_templates_guide_has_the_current_fused_op_reference():
    from sdcompile.phases.scaffold.reference import BEGIN, END, fused_op_reference

    text = (ROOT / "docs/pattern-templates.md").read_text(encoding="utf-8")
    assert BEGIN in text and END in text
    section = text[text.index(BEGIN): text.index(END) + len(END)]
    assert section == fused_op_reference(), "regenerate with `python -m sdcompile.phases.scaffold.reference`"


def test_every_recipe_calls_a_catalogued_fused_op_as_it_is_exposed():
    from sdcompile.catalogs import load
    from sdcompile.core.graph.pattern_recipes import load_recipes

    ops = {op["name"]: op for op in load("fused_ops")["op"]}
    for name, recipe in load_recipes().items():
        assert recipe.fused_op in ops, f"{name}: {recipe.fused_op} is not in fused_ops.toml"
        namespace, op = recipe.fused_op.split("::")
        assert recipe.graph_call.op == f"{namespace}.{op}.default"
        # torch_npu's ops are called as torch_npu exposes them, MindIE-SD's through torch.ops
        calls = [f"torch_npu.{e}(" for e in ops[recipe.fused_op]["exposed_as"]] or [f"torch.ops.{namespace}.{op}("]
        # ...or through the MindIE-SD function the catalog names as its user (rotary_position_embedding)
        calls += [u.split("(")[0] + "(" for u in ops[recipe.fused_op].get("used_by", []) if u.startswith("mindiesd.")]
        assert any(recipe.call.startswith(c) for c in calls), recipe.call
        # every role reaches the graph pass's call: positionally, by keyword (optional roles, None when missing), or
        # through the setup lines computing an argument; an argument that is no role is one of those
        roles = {r.name for r in recipe.roles}
        setup_reads = {name for line, _ in recipe.setup for name in roles if "{" + name + "}" in line}
        computed = [a for a in recipe.graph_call.args if a not in roles]
        assert set(computed) <= set(recipe.setup_names), computed
        through_setup = setup_reads if computed else set()
        assert (set(recipe.graph_call.args) - set(computed)) | {r for _, r in recipe.graph_call.role_kwargs} \
            | through_setup == {r.name for r in recipe.roles if r.read}
        assert {c for _, c in recipe.graph_call.kwargs} == {c.name for c in recipe.constants}
