"""What each compiled fused op accepts, as data (`[op.contract]` in catalogs/fused_ops.toml), enforced by its kernel.

The emulated kernels of torch_npu's ops and of MindIE-SD's compiled library compute with torch, which broadcasts
anything; the real ops do not. Each contract lists the ranks, dtypes, shapes and broadcast forms the op's
documentation (cited in `source`) gives, and `enforce` raises ContractViolation with the op's name, the operand and
what it holds before the reference kernel runs, so a replacement the NPU would refuse fails here too. An op whose
contract is not documented says so (`known = false`) instead of passing silently.

Rules, each keyed by operand name (the op's schema names):
    rank          allowed numbers of dimensions
    dtypes        allowed dtypes ("bfloat16", "float16", "float32")
    same_dtype    groups of operands that must share a dtype
    dtype_combos  [{of = [operands], allowed = [[dtypes]]}]: the dtypes those operands hold together, one of `allowed`
    trailing_of   operand -> another: its shape must equal the other's trailing dimensions
    sizes_of      operand -> {of, dims = [[its dim, of's dim], ...]}: those dimensions the same size
    last_dim      operand -> {even, below, multiple_of}
    broadcast     operand -> {of, forms}: its shape against `of`'s, dimension by dimension; each form is a string
                  with "=" (the same size) or "1" per dimension ("11==" : [1, 1, S, D] against [B, N, S, D]), mapped
                  to the layouts of `of` it is documented for ("11==" = ["BNSD"])
    dims_below    operand -> {dimensions: limit}: in one of the layouts its operands' forms leave, each named
                  dimension ("B") or product ("B*N") of it is below the limit
    modes         {attribute, default, <value> = {rules}}: where the op's `attribute` operand (its default when
                  not passed) has a value listed, that value's rules replace the rules of the same name; a mode's
                  `remedy` is said after its violations
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from sdcompile.catalogs import load


class ContractViolation(RuntimeError):
    """An input the real op refuses, by its documented contract."""


@dataclass(frozen=True)
class Contract:
    op: str
    known: bool
    source: str
    rules: dict

    def describe(self) -> str:
        return f"documented ({self.source})" if self.known else f"unknown ({self.source})"


@cache
def contracts() -> dict[str, Contract]:
    found = {}
    for entry in load("fused_ops")["op"]:
        spec = entry.get("contract")
        if spec is None:
            continue
        rules = {k: v for k, v in spec.items() if k not in ("known", "source")}
        found[entry["name"]] = Contract(entry["name"], bool(spec.get("known", True)), spec.get("source", ""), rules)
    return found


def contract_of(op: str) -> Contract | None:
    return contracts().get(op)


def _dtype_name(t) -> str:
    return str(t.dtype).removeprefix("torch.")


def _shape(t) -> str:
    return "(" + ", ".join(str(int(n)) for n in t.shape) + ")"


def violations(op: str, operands: dict) -> list[str]:
    """Every way `operands` (schema name -> value) break `op`'s contract; empty when it holds or is unknown."""
    import torch

    contract = contract_of(op)
    if contract is None or not contract.known:
        return []
    tensors = {k: v for k, v in operands.items() if isinstance(v, torch.Tensor)}
    rules = _in_mode(contract.rules, operands)
    found = _dtype_violations(rules, tensors) + _shape_violations(rules, tensors)
    if found and "mode" in rules:
        found = [f"in {rules['mode']}: {found[0]}", *found[1:]] + ([rules["remedy"]] if "remedy" in rules else [])
    return found


def _dtype_violations(rules: dict, tensors: dict) -> list[str]:
    found = []
    for name, allowed in rules.get("dtypes", {}).items():
        if name in tensors and _dtype_name(tensors[name]) not in allowed:
            found.append(f"{name} must be {', '.join(allowed)}, got {_dtype_name(tensors[name])}")
    for group in rules.get("same_dtype", []):
        present = [n for n in group if n in tensors]
        if len({tensors[n].dtype for n in present}) > 1:
            found.append("dtypes must match: " + ", ".join(f"{n} {_dtype_name(tensors[n])}" for n in present))
    for combo in rules.get("dtype_combos", []):
        if all(n in tensors for n in combo["of"]):
            held = [_dtype_name(tensors[n]) for n in combo["of"]]
            if held not in combo["allowed"]:
                pairs = " with ".join(f"{n} {d}" for n, d in zip(combo["of"], held, strict=True))
                accepted = "; ".join("/".join(a) for a in combo["allowed"])
                found.append(f"{pairs} is not a combination the op takes (accepted: {accepted})")
    return found


def _shape_violations(rules: dict, tensors: dict) -> list[str]:
    found = []
    for name, ranks in rules.get("rank", {}).items():
        if name in tensors and tensors[name].dim() not in ranks:
            found.append(f"{name} must have {' or '.join(map(str, ranks))} dimensions, got {_shape(tensors[name])}")
    for name, of in rules.get("trailing_of", {}).items():
        if name in tensors and of in tensors:
            k = tensors[name].dim()
            if k > tensors[of].dim() or tuple(tensors[of].shape[tensors[of].dim() - k:]) != tuple(tensors[name].shape):
                found.append(f"{name} {_shape(tensors[name])} must equal the last dimensions of {of} "
                             f"{_shape(tensors[of])}")
    for name, spec in rules.get("sizes_of", {}).items():
        of = spec["of"]
        if name in tensors and of in tensors and tensors[name].dim() and tensors[of].dim():
            t, o = tensors[name].shape, tensors[of].shape
            if any(t[mine] != o[theirs] for mine, theirs in spec["dims"]):
                found.append(f"{name} {_shape(tensors[name])} must match {of} {_shape(tensors[of])} in dimensions "
                             + ", ".join(f"{mine} ({of} {theirs})" for mine, theirs in spec["dims"]))
    for name, limits in rules.get("last_dim", {}).items():
        if name in tensors and tensors[name].dim():
            found += _last_dim(name, int(tensors[name].shape[-1]), limits)
    return found + _layout_violations(rules, tensors)


def _layout_violations(rules: dict, tensors: dict) -> list[str]:
    """The broadcast forms, then the size limits in the layouts those forms leave."""
    found = []
    layouts: dict[str, set[str]] = {}  # operand -> the layouts its broadcasting operands' forms leave it
    for name, spec in rules.get("broadcast", {}).items():
        if name in tensors and spec["of"] in tensors:
            of = spec["of"]
            allowed = _broadcast_layouts(tensors[name], tensors[of], spec["forms"])
            if allowed is None:
                found.append(_broadcast_refused(name, tensors[name], of, tensors[of], spec["forms"]))
            else:
                layouts[of] = layouts.get(of, allowed) & allowed
    for name, limits in rules.get("dims_below", {}).items():
        if name in tensors and layouts.get(name):
            found += _dims_below(name, tensors[name], layouts[name], limits)
    return found


def _in_mode(rules: dict, operands: dict) -> dict:
    """The rules for the mode `operands` are in: a listed mode's replace the base's, and say which mode it is."""
    modes = rules.get("modes")
    if not modes:
        return rules
    mode = operands.get(modes["attribute"], modes["default"])
    base = {k: v for k, v in rules.items() if k != "modes"}
    return {**base, **modes[mode], "mode": f"{modes['attribute']}={mode!r}"} if mode in modes else base


def _last_dim(name: str, d: int, limits: dict) -> list[str]:
    found = []
    if limits.get("even") and d % 2:
        found.append(f"{name}'s last dimension must be even, got {d}")
    if "below" in limits and d >= limits["below"]:
        found.append(f"{name}'s last dimension must be below {limits['below']}, got {d}")
    if "multiple_of" in limits and d % limits["multiple_of"]:
        found.append(f"{name}'s last dimension must be a multiple of {limits['multiple_of']}, got {d}")
    return found


def _broadcast_layouts(t, of, forms: dict[str, list[str]]) -> set[str] | None:
    """The layouts of `of` that the forms `t` takes against it are documented for; None when it takes none."""
    if t.dim() != of.dim():
        return set()  # the rank rule says it
    taken = [form for form in forms if len(form) == t.dim() and all(
        (size == full) if mark == "=" else (size == 1)
        for mark, size, full in zip(form, t.shape, of.shape, strict=True))]
    return {layout for form in taken for layout in forms[form]} if taken else None


def _broadcast_refused(name: str, t, of_name: str, of, forms: dict[str, list[str]]) -> str:
    return (f"{name} {_shape(t)} is not a form the op broadcasts against {of_name} {_shape(of)} "
            f"(accepted: {', '.join(forms)}, '=' the same size, '1' broadcast)")


def _dims_below(name: str, t, layouts: set[str], limits: dict[str, int]) -> list[str]:
    def size(layout: str, dims: str) -> int:
        product = 1
        for dim in dims.split("*"):
            product *= int(t.shape[layout.index(dim)])
        return product

    fitting = [layout for layout in layouts if len(layout) == t.dim()
               and all(size(layout, dims) < limit for dims, limit in limits.items())]
    if fitting or not any(len(layout) == t.dim() for layout in layouts):
        return []
    said = "; ".join(f"as {layout}: " + ", ".join(f"{dims} {size(layout, dims)}" for dims in limits)
                     for layout in sorted(layouts))
    return [f"{name} {_shape(t)} must have " + ", ".join(f"{dims} below {limit}" for dims, limit in limits.items())
            + f" ({said})"]


def enforce(op: str, operands: dict) -> None:
    found = violations(op, operands)
    if found:
        raise ContractViolation(f"{op.split('::', 1)[-1]}: " + "; ".join(found))
