"""How a graph pass inserts a recipe's fused op for a chain (path B): the call as text, and why it cannot."""

from __future__ import annotations

from collections.abc import Mapping

from sdcompile.core.graph.pattern_chain import Chain
from sdcompile.core.graph.pattern_recipes import Recipe, absent_nodes, lifted_roles, output_cast, weight_casts


def graph_call_text(recipe: Recipe, chain: Chain, choice: Mapping[str, str] | None = None) -> str:
    """The node a graph pass inserts for this chain, spelled as a call (`npu.npu_rms_norm.default(x, weight,
    epsilon=_epsilon)[0]`): its casts, stand-ins for absent roles and `choice` (keyword -> literal) included."""
    call = recipe.graph_call
    present = {i.role for i in chain.inputs}
    casts = weight_casts(chain, recipe)
    stand_ins = {role: f"{op}({of})" for role, op, of in absent_nodes(recipe, chain)}

    lifted = lifted_roles(recipe, chain)
    bound = dict(chain.bind_points)  # roles taken as a chain node's value (scale as it meets the + 1)

    def value(role: str) -> str:
        if role in stand_ins:
            return stand_ins[role]
        text = bound.get(role, role)
        text = f"{text}.to({casts[role].removeprefix('torch.')})" if role in casts else text
        if role in recipe.flat_roles:
            text = f"{text}.expand({recipe.output_like}.shape)"
        return f"{text}.unsqueeze({recipe.lift.dim})" if role in lifted else text

    parts = [value(r) for r in call.args]
    parts += [f"{k}={value(r) if r in present else None}" for k, r in call.role_kwargs]
    parts += [f"{k}=_{c}" for k, c in call.kwargs]
    parts += [f"{k}={lit}" for k, lit in (choice or {}).items()]
    text = f"{call.op}({', '.join(parts)})" + (f"[{call.output}]" if call.output is not None else "")
    if lifted:
        text = f"{text}.squeeze({recipe.lift.dim})"
    out = output_cast(chain, recipe)
    return f"{text}.to({'dtype' if out == chain.model_dtype else out})" if out else text


def graph_call_refusal(recipe: Recipe, chain: Chain) -> str | None:
    """Why a graph pass cannot insert the recipe's op for this chain (None: it can): a positional argument the
    chain lacks, or an input outside the shapes the op takes (`graph_call.shapes`, symbols shared by roles)."""
    present = {i.role: i for i in chain.inputs}
    if recipe.rotates_part(chain):
        part = recipe.partial
        return (f"{part.role} is rotated on its leading {present[part.tables[0]].shape[-1]} of "
                f"{present[part.role].shape[-1]} channels only: a graph pass would have to insert the slices and the "
                "concatenation around the op too (path A's replacement does)")
    missing = [r for r in recipe.graph_call.args if r not in present and recipe.role(r).absent_node is None]
    if missing:
        return f"the chain has no {', '.join(missing)}, which the graph pass's {recipe.graph_call.op} call needs"
    symbols: dict[str, int] = {}
    lifted = lifted_roles(recipe, chain)
    for role, allowed in recipe.graph_call.shapes.items():
        shape = tuple(present[role].shape) if role in present else ()
        if role in lifted:  # the op sees the shape with the lift's axis
            shape = _with_axis(shape, recipe.lift.dim)
        if role in present and not any(_binds(spec, shape, symbols) for spec in allowed):
            spelled = " or ".join("[" + ", ".join(str(d) for d in spec) + "]" for spec in allowed)
            return (f"{role} is {list(shape)}; the graph pass's {recipe.graph_call.op} takes {spelled}"
                    " (path A's call takes more)")
    return None


def _with_axis(shape: tuple, dim: int) -> tuple:
    at = dim if dim >= 0 else len(shape) + 1 + dim
    return (*shape[:at], 1, *shape[at:])


def _binds(spec: tuple, shape: tuple, symbols: dict[str, int]) -> bool:
    """Whether `shape` is `spec` (ints literal, strings symbols bound on first use); binds the symbols if so."""
    if len(spec) != len(shape):
        return False
    trial = dict(symbols)
    for want, got in zip(spec, shape, strict=True):
        if isinstance(want, int):
            if want != got:
                return False
        elif trial.setdefault(want, got) != got:
            return False
    symbols.update(trial)
    return True
