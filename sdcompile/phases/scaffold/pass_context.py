"""The contexts graph_entries.py.j2 (the GraphPatternEntry carrier) and graph_pass.py.j2 (a custom graph pass, on
request only) render from: each chain's table (_chain_table.py.j2), the fused call its `fuse` inserts (casts,
stand-ins, lifts, expansions), what its match must also satisfy (shapes, producers) and the imports its fused ops
need."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sdcompile.core.graph.pattern_chain import torch_ops_expr
from sdcompile.core.graph.pattern_graph_call import graph_setup, partial_width
from sdcompile.core.graph.pattern_layout import adapted_layout, adapted_roles, lifted_roles
from sdcompile.core.graph.pattern_recipes import absent_nodes, output_cast, weight_casts
from sdcompile.core.npu.emulation.ops import fused_op_table
from sdcompile.phases.scaffold.sources import (
    Provenance,
    constant_comment,
    identifier,
    python_literal,
    tuple_literal,
    wrap_doc,
)


def _items_tuple(items: Iterable[str]) -> str:
    """Python source items as a tuple literal ("" when there are none)."""
    items = list(items)
    return "" if not items else f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"


def entries_context(plan, provenance: Provenance) -> dict[str, Any]:
    """Context of graph_entries.py.j2 from entries_file.EntriesPlan."""
    context = chain_table_context(plan, provenance)
    ops = dict.fromkeys(v.recipe.graph_call.op.removesuffix(".default") for v in plan.variants)
    context.update({
        "register_function": identifier(plan.register_function, "registration function"),
        "fused_ops_tuple": "(" + "".join(f"{python_literal(repr(op))}, " for op in ops).rstrip(" ") + ")",
    })
    return context


def graph_pass_context(plan, provenance: Provenance) -> dict[str, Any]:
    """Context of graph_pass.py.j2 from pass_file's plan."""
    context = chain_table_context(plan, provenance)
    context["pass_class"] = identifier(plan.pass_class, "pass class")
    return context


def chain_table_context(plan, provenance: Provenance) -> dict[str, Any]:
    """What _chain_table.py.j2 and the module around it read, from a plan holding the variants."""

    variants = []
    for v in plan.variants:
        chain, recipe = v.chain, v.recipe
        identifier(v.factory, "chain factory")
        table, last = [], None
        for op in chain.ops:
            comment = op.source if op.source and op.source != last else ""
            last = op.source or last
            target = "operator.getitem" if op.target == "getitem" else torch_ops_expr(op.target)
            table.append({"target": target, "args": op.table_args, "comment": comment})
        casts = [{"role": role, "dtype": "dtype" if dtype == chain.model_dtype else dtype}
                 for role, dtype in weight_casts(chain, recipe).items()]
        cast_roles = {c["role"] for c in casts}
        call = recipe.graph_call
        present = {i.role for i in chain.inputs}
        stand_ins = [{"role": identifier(role, "role"), "op": torch_ops_expr(op), "of": f'inputs["{of}"]'}
                     for role, op, of in absent_nodes(recipe, chain)]
        local = cast_roles | {s["role"] for s in stand_ins}
        # the op's rank: a size-1 axis on each lifted role, taken off the result (x as [B, S, H * D])
        lifts = [{"role": identifier(r, "role"), "of": r if r in local else f'inputs["{r}"]'}
                 for r in lifted_roles(recipe, chain)]
        local |= {lift["role"] for lift in lifts}
        expands = [{"role": identifier(r, "role"), "of": r if r in local else f'inputs["{r}"]'}
                   for r in recipe.flat_roles if r in present]
        local |= {e["role"] for e in expands}
        # x [S, B, D], [B, T, H, W, D] or modulated per token: the op takes x and its modulation viewed another way
        adapted = adapted_layout(recipe, chain)
        like = recipe.output_like
        sources = {r.name: r.absent_node[1] for r in recipe.roles if r.absent_node is not None}
        layout_roles = [{"role": identifier(r, "role"), "of": r if r in local else f'inputs["{r}"]',
                         "source": f'inputs["{identifier(sources.get(r, r) if r not in present else r, "role")}"]',
                         "is_like": r == like}
                        for r in adapted_roles(recipe, chain)]
        local |= {t["role"] for t in layout_roles}
        # a partial rotation: the op takes x's leading channels, the rest is concatenated back after it
        width = partial_width(recipe, chain)
        partial = None if width is None else {
            "role": identifier(recipe.partial.role, "role"), "width": width,
            "of": recipe.partial.role if recipe.partial.role in local else f'inputs["{recipe.partial.role}"]',
            "whole": f'inputs["{identifier(recipe.partial.role, "role")}"]'}
        if partial is not None:
            local.add(partial["role"])
        at_rank = [{"role": identifier(r, "role"), "of": r if r in local else f'inputs["{r}"]',
                    "source": f'inputs["{identifier(r, "role")}"]'} for r in call.at_rank if r in present]
        local |= {a["role"] for a in at_rank}
        setup, setup_reads, setup_outputs = graph_setup(recipe, chain)
        local |= set(setup_outputs)
        args = [a if a in local else f'inputs["{a}"]' for a in call.args]
        role_kwargs = [(k, (r if r in local else f'inputs["{r}"]') if r in present else "None")
                       for k, r in call.role_kwargs]
        out_cast = output_cast(chain, recipe)
        variants.append({
            "factory": v.factory,
            "constant_params": ", ".join(f"{c.name}={v.default_constants[c.name]}" for c in chain.constants),
            "summary": v.summary,
            "doc": wrap_doc(v.doc, 4),
            "constants": [{"name": identifier(c.name, "constant"), "fp32_rounded": c.fp32_rounded,
                           "comment": wrap_doc(constant_comment(c), 6)} for c in chain.constants],
            "table": table,
            "input_casts": casts,
            "stand_ins": stand_ins,
            "lifts": lifts,
            "lift_dim": recipe.lift.dim if lifts else None,
            "call_op": torch_ops_expr(call.op),
            "call_args": f"({args[0]},)" if len(args) == 1 else f"({', '.join(args)})",
            "call_kwargs": "{" + ", ".join([*(f'"{k}": {v}' for k, v in role_kwargs),
                                            *(f'"{k}": _{c}' for k, c in call.kwargs),
                                            *(f'"{identifier(k, "keyword")}": {python_literal(lit)}'
                                              for k, lit in v.graph_choice.items())]) + "}",
            "roles": tuple_literal(identifier(i.role, "role") for i in chain.inputs),
            "call_output": call.output,
            "output_cast": ("dtype" if out_cast == chain.model_dtype else out_cast) if out_cast else None,
            "chain_name": v.chain_name_expr,
            "shared": repr(set(chain.shared)) if chain.shared else "",
            "binds": _items_tuple(f'("{identifier(role, "role")}", {[op.var for op in chain.ops].index(var)})'
                                  for role, var in chain.bind_points),
            "not_from": _items_tuple(f'("{identifier(r.name, "role")}", {tuple(r.not_from)!r})'
                                     for r in recipe.roles if r.not_from and r.name in present),
            "shaped": bool(recipe.graph_call.shapes),
            "expands": expands,
            "layout_roles": layout_roles,
            "partial": partial,
            "at_rank": at_rank,
            "layout": adapted.layout.name if adapted is not None else "",
            "layout_swaps": adapted is not None and adapted.swaps,
            "batch_dims": adapted.batch_dims if adapted is not None else 1,
            "expand_like": identifier(recipe.output_like, "role"),
            "setup": setup,
            "setup_params": ", ".join(identifier(r, "role") for r in setup_reads),
            "setup_args": _items_tuple(r if r in local else f'inputs["{r}"]' for r in setup_reads),
            "setup_outputs": ", ".join(identifier(n, "setup value") for n in setup_outputs) + (
                "," if len(setup_outputs) == 1 else ""),
        })
    shaped = [v.recipe for v in plan.variants if v.recipe.graph_call.shapes]
    shapes = shaped[0].graph_call.shapes if shaped else {}
    if any(r.graph_call.shapes != shapes for r in shaped):
        raise ValueError("one graph pass holds chains of fused ops taking different SHAPES")
    return {
        "header": provenance.header(),
        "doc": {"title": plan.title, "lines": wrap_doc(plan.doc)},
        "parameter_roles_tuple": tuple_literal(identifier(r, "role") for r in plan.parameter_roles),
        "shapes": repr({identifier(role, "role"): specs for role, specs in shapes.items()}) if shapes else "",
        "fused_op": shaped[0].graph_call.op if shaped else "",
        "shapes_like": identifier(shaped[0].output_like, "role") if shaped else "",
        "op_imports": _op_imports(v.recipe.graph_call.op for v in plan.variants),
        "variants": variants,
        "uses_not_from": any(v["not_from"] for v in variants),
        "uses_setup": any(v["setup"] for v in variants),
        "uses_at_rank": any(v["at_rank"] for v in variants),
        "uses_getitem": any(v["call_output"] is not None or v["not_from"]
                            or any(t["target"] == "operator.getitem" for t in v["table"]) for v in variants),
        "chain_entries": plan.chain_entries,
    }


def _op_imports(graph_ops) -> list[str]:
    """The imports a graph pass needs for its fused ops to exist: those a file of the target defines (fused_ops.toml's
    registered_by, e.g. mindiesd/layers/scale_shift.py), relative to mindiesd/compilation/passes/."""

    by_target = {op.target: op.registered_by for op in fused_op_table()}
    lines = []
    for graph_op in dict.fromkeys(graph_ops):
        path = by_target.get(graph_op, "")
        if not path.startswith("mindiesd/") or not path.endswith(".py"):
            continue
        *package, module = path.removeprefix("mindiesd/").removesuffix(".py").split("/")
        names = [identifier(part, "module") for part in (*package, module)]
        lines.append(f"from ...{'.'.join(names[:-1])} import {names[-1]} as _defines_{names[-1]}  # noqa: F401 - "
                     f"defines torch.ops.{graph_op.rsplit('.', 1)[0]}")
    return lines
