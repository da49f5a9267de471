"""Which shapes a fused op takes (a recipe's `graph_call.shapes`), and the layouts sdcompile adapts around it.

mindiesd::adaln takes x [B, S, D] with [B, D] or [B, 1, D] modulation. A chain whose shapes do not fit that as they
are is fused on x (and its modulation) viewed another way, the result viewed back:

    sequence first  x [S, B, D] (ERNIE-Image) with [B, D] or [1, B, D]: dims 0 and 1 swapped (a 2-D [B, D]
                    broadcasts as it is); with a batch of one, [1, S, D] fits as it is and nothing is swapped
    flattened       x [B, T, H, W, D] (Kandinsky 5) with [B, 1, 1, 1, D]: the middle dims as one sequence; with
                    modulation per frame, [B, F, 1, D] against [B, F, S, D] (SANA-WM), batch and frames as the batch
    token rows      x and its modulation [B, S, D] alike (per-token modulation): each token a row of its own,
                    x [B * S, 1, D] and the modulation [B * S, D]

The first layout whose shapes fit is the chain's; none fitting is the refusal of the as-is shapes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sdcompile.core.graph.pattern_chain import Chain
    from sdcompile.core.graph.pattern_recipes import Recipe

Shape = tuple[int, ...]


@dataclass(frozen=True)
class Layout:
    name: str
    # role -> its shape as the op takes it, from its own shape and x's (None: the role is taken as it is)
    view: Callable[[Shape, Shape], Shape | None]
    swaps: bool = False  # a transpose of dims 0 and 1 (else a reshape to `view`'s shape)


def _swapped(shape: Shape, _x: Shape) -> Shape | None:
    return (shape[1], shape[0], *shape[2:]) if len(shape) == 3 else None


def _flattened(shape: Shape, x: Shape, batch_dims: int = 1) -> Shape | None:
    if len(shape) == batch_dims + 1 < len(x) and shape[:-1] == x[:batch_dims]:
        return math.prod(shape[:-1]), shape[-1]  # a modulation per batch dim ([B, F, D]): [B * F, D]
    if len(shape) <= 3:
        return None
    return math.prod(shape[:batch_dims]), math.prod(shape[batch_dims:-1]), shape[-1]


def _batch_dims(by_role: Mapping[str, Shape], x: Shape, roles) -> int:
    """How many leading dims of x the modulation varies along (a video's batch and frames, [B, F, 1, D] against
    [B, F, S, D]: 2); those become the op's batch, the rest its sequence."""
    found = 1
    for role, shape in by_role.items():
        if role not in roles or shape == x or len(shape) < 2:
            continue
        if len(shape) == len(x):
            varying = [j for j in range(len(shape) - 1) if shape[j] != 1]
            found = max(found, max(varying, default=0) + 1)
        elif len(shape) < len(x) and shape[:-1] == x[:len(shape) - 1]:  # [B, F, D], the chain inserts the S axis
            found = max(found, len(shape) - 1)
    return found


def _rows(shape: Shape, x: Shape) -> Shape | None:
    if shape != x or len(shape) < 3:
        return None
    return (math.prod(shape[:-1]), 1, shape[-1])


LAYOUTS = (Layout("sequence first", _swapped, swaps=True), Layout("flattened", _flattened),
           Layout("token rows", _rows))


@dataclass(frozen=True)
class Adapted:
    """A chain's layout: how each role is taken (its shape for the op, or swapped) and the result given back."""

    layout: Layout
    shapes: Mapping[str, Shape]  # role -> the shape the op takes it at (roles taken as they are are absent)
    output_like: str  # the role whose shape the result is given back in
    batch_dims: int = 1  # flattened: the leading dims that become the op's batch

    @property
    def swaps(self) -> bool:
        return self.layout.swaps

    def op_shape(self, role: str) -> Shape | None:
        shape = self.shapes.get(role)
        if shape is None or self.layout.name != "token rows" or role == self.output_like:
            return shape
        return shape[0], shape[2]  # the modulation of a row: [B * S, D]


def shape_refusal(recipe: Recipe, chain: Chain, lifted: tuple[str, ...],
                  adapted: Adapted | None = None) -> str | None:
    """Why the chain's inputs are not shapes the recipe's graph call takes (None: they are), `lifted` roles seen with
    the lift's axis and `adapted` roles as that layout gives them to the op."""
    present = {i.role: i for i in chain.inputs}
    symbols: dict[str, int] = {}
    for role, allowed in recipe.graph_call.shapes.items():
        if role not in present:
            continue
        shape = tuple(present[role].shape)
        if role in lifted:  # the op sees the shape with the lift's axis
            shape = _with_axis(shape, recipe.lift.dim)
        if adapted is not None:
            shape = adapted.op_shape(role) or shape
        if not any(_binds(spec, shape, symbols) for spec in allowed):
            spelled = " or ".join("[" + ", ".join(str(d) for d in spec) + "]" for spec in allowed)
            return f"{role} is {list(shape)}; the carrier's {recipe.graph_call.op} takes {spelled}"
    return None


def adapted_layout(recipe: Recipe, chain: Chain, lifted: tuple[str, ...] = ()) -> Adapted | None:
    """The layout the chain is fused in when its shapes do not fit the op as they are (None: as they are, or no
    layout fits either)."""
    if not recipe.graph_call.shapes or shape_refusal(recipe, chain, lifted) is None:
        return None
    by_role = {i.role: tuple(i.shape) for i in chain.inputs}
    x = by_role.get(recipe.output_like)
    if x is None or len(x) < 3:
        return None
    batch = _batch_dims(by_role, x, recipe.graph_call.shapes)
    for layout in LAYOUTS:
        views = {role: layout.view(shape, x) if layout.view is not _flattened else _flattened(shape, x, batch)
                 for role, shape in by_role.items() if role in recipe.graph_call.shapes}
        shapes = {role: view for role, view in views.items() if view is not None}
        if recipe.output_like not in shapes:
            continue
        adapted = Adapted(layout, shapes, recipe.output_like, batch if layout.view is _flattened else 1)
        if shape_refusal(recipe, chain, lifted, adapted) is None:
            return adapted
    return None


def call_layout(recipe: Recipe, chain: Chain) -> Adapted | None:
    """The layout the replacement's own call is written in, unless that call takes the chain's as it is (a recipe's
    `call_takes`: layernorm_scale_shift makes each token a row itself)."""
    adapted = adapted_layout(recipe, chain)
    return None if adapted is None or adapted.layout.name in recipe.call_takes else adapted


def adapted_roles(recipe: Recipe, chain: Chain) -> tuple[str, ...]:
    """The roles the fused call takes in the chain's layout (none when it takes them as they are): the ones it
    views another way and a role the chain lacks whose stand-in is made of one of them (no shift: zeros like scale)."""
    adapted = adapted_layout(recipe, chain)
    if adapted is None:
        return ()
    present = {i.role for i in chain.inputs}
    stand_ins = tuple(r.name for r in recipe.roles if r.absent_node is not None and r.absent_node[1] in adapted.shapes
                      and r.name not in present)
    return tuple(adapted.shapes) + stand_ins


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


# ---------------------------------------------------------------------------------- the same, as code and tensors
def role_text(adapted: Adapted, role: str, text: str) -> str:
    """`text` (a role's value in a replacement) as the op takes it in this layout, for any size of that layout."""
    if adapted.swaps:
        return f"{text}.transpose(0, 1)"
    if adapted.layout.name == "flattened":
        batch = f".flatten(0, {adapted.batch_dims - 1})" if adapted.batch_dims > 1 else ""
        return f"{text}{batch}" if len(adapted.shapes[role]) == 2 else f"{text}{batch}.flatten(1, -2)"
    return f"{text}.flatten(0, -2).unsqueeze(1)" if role == adapted.output_like else f"{text}.flatten(0, -2)"


def back_text(adapted: Adapted, expr: str, x_text: str) -> str:
    """The op's result `expr` given back in the chain's layout (`x_text`: the chain's own x)."""
    return f"{expr}.transpose(0, 1)" if adapted.swaps else f"{expr}.reshape({x_text}.shape)"


def role_tensor(adapted: Adapted, role: str, value):
    """The tensor `value` of a role as the op takes it in this layout."""
    if adapted.swaps:
        return value.transpose(0, 1)
    if adapted.layout.name == "flattened":
        value = value.flatten(0, adapted.batch_dims - 1)
        return value if len(adapted.shapes.get(role, (0, 0, 0))) == 2 else value.flatten(1, -2)
    return value.flatten(0, -2).unsqueeze(1) if role == adapted.output_like else value.flatten(0, -2)


def back_tensor(adapted: Adapted, out, x):
    return out.transpose(0, 1) if adapted.swaps else out.reshape(x.shape)


def lifted_roles(recipe: Recipe, chain: Chain) -> tuple[str, ...]:
    """The roles the fused call takes with the lift's size-1 axis added (none when the chain is not lifted)."""
    if not recipe.lifted(chain):
        return ()
    present = {i.role for i in chain.inputs}
    return tuple(r for r in recipe.lift.roles if r in present)
