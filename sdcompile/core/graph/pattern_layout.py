"""Which shapes a fused op takes (a recipe's `graph_call.shapes`), and the one layout sdcompile adapts around it:
activations sequence-first.

A model holding its tokens as [S, B, D] (ERNIE-Image) modulates them with [B, D] or [1, B, D]: constant along the
sequence. mindiesd::adaln takes x [B, S, D] with [B, D] or [B, 1, D], so the fused call is written on x and the
modulation transposed (dims 0 and 1; a 2-D [B, D] broadcasts as it is) and its result transposed back. Only a chain
whose shapes do not fit as they are and do fit so is sequence-first: with a batch of one, [1, S, D] fits as it is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sdcompile.core.graph.pattern_chain import Chain
    from sdcompile.core.graph.pattern_recipes import Recipe

SWAPPED = (0, 1)  # the dims a sequence-first chain's rank-3 roles and output swap


def swapped(shape: tuple) -> tuple:
    """A rank-3 shape with its first two dims swapped; any other as it is."""
    return (shape[1], shape[0], *shape[2:]) if len(shape) == 3 else shape


def shape_refusal(recipe: Recipe, chain: Chain, lifted: tuple[str, ...], transposed: bool = False) -> str | None:
    """Why the chain's inputs are not shapes the recipe's graph call takes (None: they are), `lifted` roles seen with
    the lift's axis and, `transposed`, rank-3 roles with dims 0 and 1 swapped."""
    present = {i.role: i for i in chain.inputs}
    symbols: dict[str, int] = {}
    for role, allowed in recipe.graph_call.shapes.items():
        if role not in present:
            continue
        shape = tuple(present[role].shape)
        if role in lifted:  # the op sees the shape with the lift's axis
            shape = _with_axis(shape, recipe.lift.dim)
        if transposed:
            shape = swapped(shape)
        if not any(_binds(spec, shape, symbols) for spec in allowed):
            spelled = " or ".join("[" + ", ".join(str(d) for d in spec) + "]" for spec in allowed)
            return f"{role} is {list(shape)}; the carrier's {recipe.graph_call.op} takes {spelled}"
    return None


def sequence_first(recipe: Recipe, chain: Chain, lifted: tuple[str, ...] = ()) -> bool:
    """Whether the chain's tokens are [S, B, D]: its shapes fit the op only with dims 0 and 1 of x swapped."""
    if not recipe.graph_call.shapes:
        return False
    by_role = {i.role: i for i in chain.inputs}
    if len(by_role[recipe.output_like].shape) != 3:
        return False
    return (shape_refusal(recipe, chain, lifted) is not None
            and shape_refusal(recipe, chain, lifted, transposed=True) is None)


def transposed_roles(recipe: Recipe, chain: Chain) -> tuple[str, ...]:
    """The rank-3 roles the fused call takes transposed, when the chain is sequence-first (else none)."""
    if not sequence_first(recipe, chain):
        return ()
    present = tuple(i.role for i in chain.inputs if i.role in recipe.graph_call.shapes and len(i.shape) == 3)
    # a role the chain lacks stands in as the op's neutral value of one it has (no shift: zeros like scale)
    stand_ins = tuple(r.name for r in recipe.roles if r.absent_node is not None and r.absent_node[1] in present
                      and r.name not in {i.role for i in chain.inputs})
    return present + stand_ins


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
