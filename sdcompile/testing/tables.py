"""RoPE tables from real angles for the inputs a pattern's replacement feeds to a fused RoPE op.

Random cos/sin are not what any model feeds a rotary kernel, and some patterns are exact only on real tables:
MindIE-SD's WanRope reads even `cos` and odd `sin` lanes only, which equals `npu_rotary_mul(interleave)` exactly
when each frequency fills a pair of lanes, as every interleaved RoPE builds its tables. So the roles are read
by data flow: the replacement is traced on the example inputs, and the inputs that reach the cos/sin operands
of a fused op with `rope_tables` in `catalogs/fused_ops.toml` get tables in that op's layout: pair-repeated
for interleaved layouts, two halves otherwise, a complex table (cos + i sin, one entry per frequency) when the
input is complex, rotation matrices [[cos, -sin], [sin, cos]] when it ends in 2 x 2. Positions run along the
table's longest non-last dimension (the sequence), frequencies are `theta ** (-2 i / D)` with theta 10000, as
diffusers' `get_1d_rotary_pos_embed` builds them.
"""

from __future__ import annotations

from dataclasses import dataclass

from sdcompile.catalogs import load
from sdcompile.core.graph.nodes import target_name

THETA = 10000.0


@dataclass(frozen=True)
class TableRole:
    index: int  # position among the pattern's inputs
    part: str  # "cos", "sin" or "freqs" (complex: both at once)
    layout: str  # "pair-repeated" or "halves"
    op: str  # the fused op it feeds: "npu.npu_rotary_mul.default"

    def describe(self) -> str:
        return f"RoPE {self.part} table from real angles ({self.layout}, theta {THETA:g}) for {self.op}"


def _rope_ops() -> dict[str, dict]:
    return {e["name"].replace("::", ".") + ".default": e["rope_tables"]
            for e in load("fused_ops").get("op", []) if "rope_tables" in e}


def _placeholders_reaching(node) -> set:
    seen, stack, found = set(), [node], set()
    while stack:
        current = stack.pop()
        if not hasattr(current, "op") or id(current) in seen:
            continue
        seen.add(id(current))
        if current.op == "placeholder":
            found.add(current)
        stack.extend(current.all_input_nodes)
    return found


def table_roles(replacement, values: list) -> tuple[TableRole, ...]:
    """Which of `values` the replacement hands a fused RoPE op as its tables (empty when none, or untraceable)."""
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx

    ops = _rope_ops()
    positions = [i for i, v in enumerate(values) if isinstance(v, torch.Tensor)]

    def tensors_only(*tensors):
        merged = list(values)
        for i, t in zip(positions, tensors, strict=True):
            merged[i] = t
        return replacement(*merged)

    try:
        gm = make_fx(tensors_only, tracing_mode="fake")(*[values[i] for i in positions])
    except Exception:  # noqa: BLE001 - then the inputs stay random; numerics still run
        return ()
    placeholders = {node: positions[k] for k, node in enumerate(gm.graph.find_nodes(op="placeholder"))}
    roles: dict[int, TableRole] = {}
    for node in gm.graph.nodes:
        spec = ops.get(target_name(node.target)) if node.op == "call_function" else None
        if spec is None:
            continue
        mode = node.args[spec["mode"]] if len(node.args) > spec["mode"] else node.kwargs.get("rotary_mode")
        layout = "pair-repeated" if (mode or spec["default_mode"]) in spec["pair_repeated"] else "halves"
        for part in ("cos", "sin"):
            if len(node.args) <= spec[part]:
                continue
            reached = [placeholders[p] for p in _placeholders_reaching(node.args[spec[part]]) if p in placeholders]
            for index in reached:
                roles.setdefault(index, TableRole(index, _part(values[index], part), layout, target_name(node.target)))
    return tuple(sorted(roles.values(), key=lambda r: r.index))


def _part(value, reached_as: str) -> str:
    """What a table input is: complex (cos + i sin), rotation matrices ([..., 2, 2], both parts at once) or the
    part it reaches the op as."""
    if value.is_complex():
        return "freqs"
    if value.dim() >= 3 and tuple(value.shape[-2:]) == (2, 2):
        return "matrix"
    return reached_as


def real_table(shape: tuple[int, ...], dtype, part: str, layout: str):
    """A cos, sin, complex or rotation-matrix RoPE table of `shape`, positions along the longest non-last
    dimension (of those before the frequencies)."""
    import torch

    if not shape:
        raise ValueError("a RoPE table has at least one dimension")
    if part == "matrix":  # [..., D/2, 2, 2]: [[cos, -sin], [sin, cos]] per frequency
        unit = real_table(shape[:-2], torch.complex128, "freqs", layout)  # cos + i sin, one entry per frequency
        c, s = unit.real, unit.imag
        rows = [torch.stack([c, -s], dim=-1), torch.stack([s, c], dim=-1)]
        return torch.stack(rows, dim=-2).to(dtype)
    lanes = shape[-1]
    frequencies = lanes if part == "freqs" else max(1, lanes // 2)
    head_dim = 2 * frequencies
    inv_freq = THETA ** (-torch.arange(frequencies, dtype=torch.float64) * 2 / head_dim)
    if part != "freqs":
        if layout == "pair-repeated":
            inv_freq = inv_freq.repeat_interleave(2)
        else:
            inv_freq = torch.cat([inv_freq, inv_freq])
        inv_freq = inv_freq[:lanes]
    rank = len(shape)
    seq_dim = max(range(rank - 1), key=lambda d: (shape[d], -d)) if rank > 1 else None
    view = [1] * rank
    positions = torch.zeros(1, dtype=torch.float64)
    if seq_dim is not None:
        positions = torch.arange(shape[seq_dim], dtype=torch.float64)
        view[seq_dim] = shape[seq_dim]
    freq_view = [1] * rank
    freq_view[-1] = inv_freq.numel()
    angles = positions.reshape(view) * inv_freq.reshape(freq_view)
    if part == "freqs":
        table = torch.polar(torch.ones_like(angles), angles)
    else:
        table = torch.cos(angles) if part == "cos" else torch.sin(angles)
    return table.expand(shape).contiguous().to(dtype)


def with_real_tables(replacement, values: list) -> tuple[list, tuple[TableRole, ...]]:
    """`values` with every RoPE table input replaced by a real one of the same shape and dtype."""
    roles = table_roles(replacement, values)
    values = list(values)
    for role in roles:
        value = values[role.index]
        values[role.index] = real_table(tuple(value.shape), value.dtype, role.part, role.layout)
    return values, roles
