"""How a graph pass inserts a recipe's fused op for a chain (path B): the call as text, and why it cannot."""

from __future__ import annotations

from collections.abc import Mapping

from sdcompile.core.graph.pattern_chain import Chain
from sdcompile.core.graph.pattern_layout import (
    adapted_layout,
    adapted_roles,
    back_text,
    lifted_roles,
    role_text,
    shape_refusal,
)
from sdcompile.core.graph.pattern_recipes import (
    Recipe,
    absent_nodes,
    output_cast,
    replacement_setup,
    weight_casts,
)


def graph_call_text(recipe: Recipe, chain: Chain, choice: Mapping[str, str] | None = None) -> str:
    """The node a graph pass inserts for this chain, spelled as a call (`npu.npu_rms_norm.default(x, weight,
    epsilon=_epsilon)[0]`): its casts, stand-ins for absent roles and `choice` (keyword -> literal) included."""
    call = recipe.graph_call
    present = {i.role for i in chain.inputs}
    casts = weight_casts(chain, recipe)
    stand_ins = {role: f"{op}({of})" for role, op, of in absent_nodes(recipe, chain)}

    lifted = lifted_roles(recipe, chain)
    bound = dict(chain.bind_points)  # roles taken as a chain node's value (scale as it meets the + 1)

    setup, _reads, computed = graph_setup(recipe, chain)

    def value(role: str) -> str:
        if role in computed:
            return role
        if role in stand_ins:
            return stand_ins[role]
        text = bound.get(role, role)
        text = f"{text}.to({casts[role].removeprefix('torch.')})" if role in casts else text
        if role in recipe.flat_roles:
            text = f"{text}.expand({recipe.output_like}.shape)"
        return f"{text}.unsqueeze({recipe.lift.dim})" if role in lifted else text

    adapted, adapted_names = adapted_layout(recipe, chain), adapted_roles(recipe, chain)

    def arg(role: str) -> str:
        return role_text(adapted, role, value(role)) if role in adapted_names else value(role)

    width = partial_width(recipe, chain)

    def arg(role: str, arg=arg) -> str:  # a partial rotation's op takes x's leading channels
        text = arg(role)
        return f"{text}[..., :{width}]" if width is not None and role == recipe.partial.role else text

    parts = [arg(r) for r in call.args]
    parts += [f"{k}={arg(r) if r in present else None}" for k, r in call.role_kwargs]
    parts += [f"{k}=_{c}" for k, c in call.kwargs]
    parts += [f"{k}={lit}" for k, lit in (choice or {}).items()]
    text = f"{call.op}({', '.join(parts)})" + (f"[{call.output}]" if call.output is not None else "")
    if lifted:
        text = f"{text}.squeeze({recipe.lift.dim})"
    if adapted is not None:  # given back in the chain's own layout
        text = back_text(adapted, text, recipe.output_like)
    if width is not None:  # the channels past the tables' width, as the chain passes them through
        text = f"torch.cat([{text}, {recipe.partial.role}[..., {width}:]], dim=-1)"
    out = output_cast(chain, recipe)
    text = f"{text}.to({'dtype' if out == chain.model_dtype else out})" if out else text
    return "; ".join([*setup, text])


def partial_width(recipe: Recipe, chain: Chain) -> int | None:
    """How many leading channels of x a partial rotation's op takes (its tables' width), or None: all of them."""
    if not recipe.rotates_part(chain):
        return None
    return int(next(i for i in chain.inputs if i.role == recipe.partial.tables[0]).shape[-1])


def graph_setup(recipe: Recipe, chain: Chain) -> tuple[list[str], tuple[str, ...], tuple[str, ...]]:
    """What a graph pass computes before its call, as (the setup lines it needs, the roles they read, the names of the
    graph call's arguments they assign); nothing when every argument is a role. The lines are filled with the role
    names themselves: the pass hands them the nodes already bound (scale as it meets the + 1)."""
    import ast

    outputs = tuple(a for a in recipe.graph_call.args if a in recipe.setup_names)
    if not outputs:
        return [], (), ()
    lines = replacement_setup(recipe, chain)
    needed, kept = set(outputs), []
    for line in reversed(lines):
        assigned = line.split("=", 1)[0].strip()
        if assigned in needed:
            kept.insert(0, line)
            needed |= {n.id for n in ast.walk(ast.parse(line.split("=", 1)[1].strip())) if isinstance(n, ast.Name)}
    present = [i.role for i in chain.inputs]
    return kept, tuple(r for r in present if r in needed), outputs


def graph_call_refusal(recipe: Recipe, chain: Chain) -> str | None:
    """Why a graph pass cannot insert the recipe's op for this chain (None: it can): a positional argument the
    chain lacks, or an input outside the shapes the op takes (`graph_call.shapes`, symbols shared by roles)."""
    present = {i.role: i for i in chain.inputs}
    if recipe.rotates_part(chain) and recipe.lifted(chain):
        return (f"{recipe.output_like} has its heads folded into its channels and its tables are narrower: which "
                "channels of each head rotate is not in the chain's shapes")
    missing = [r for r in recipe.graph_call.args if r not in present and r not in recipe.setup_names
               and recipe.role(r).absent_node is None]
    if missing:
        return f"the chain has no {', '.join(missing)}, which the carrier's {recipe.graph_call.op} call needs"
    lifted = lifted_roles(recipe, chain)
    if adapted_layout(recipe, chain, lifted) is not None:
        return None  # the call is written on the tokens viewed as it takes them (pattern_layout)
    why = shape_refusal(recipe, chain, lifted)
    return f"{why} (path A's call takes more)" if why else None
