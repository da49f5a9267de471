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
    trailing_of   operand -> another: its shape must equal the other's trailing dimensions
    last_dim      operand -> {even, below, multiple_of}
    broadcast     operand -> {of, forms}: its shape against `of`'s, dimension by dimension; each form is a string
                  with "=" (the same size) or "1" per dimension ("11==" : [1, 1, S, D] against [B, N, S, D])
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
    rules = contract.rules
    found = []
    for name, ranks in rules.get("rank", {}).items():
        if name in tensors and tensors[name].dim() not in ranks:
            found.append(f"{name} must have {' or '.join(map(str, ranks))} dimensions, got {_shape(tensors[name])}")
    for name, allowed in rules.get("dtypes", {}).items():
        if name in tensors and _dtype_name(tensors[name]) not in allowed:
            found.append(f"{name} must be {', '.join(allowed)}, got {_dtype_name(tensors[name])}")
    for group in rules.get("same_dtype", []):
        present = [n for n in group if n in tensors]
        if len({tensors[n].dtype for n in present}) > 1:
            found.append("dtypes must match: " + ", ".join(f"{n} {_dtype_name(tensors[n])}" for n in present))
    for name, of in rules.get("trailing_of", {}).items():
        if name in tensors and of in tensors:
            k = tensors[name].dim()
            if k > tensors[of].dim() or tuple(tensors[of].shape[tensors[of].dim() - k:]) != tuple(tensors[name].shape):
                found.append(f"{name} {_shape(tensors[name])} must equal the last dimensions of {of} "
                             f"{_shape(tensors[of])}")
    for name, limits in rules.get("last_dim", {}).items():
        if name in tensors and tensors[name].dim():
            found += _last_dim(name, int(tensors[name].shape[-1]), limits)
    for name, spec in rules.get("broadcast", {}).items():
        if name in tensors and spec["of"] in tensors:
            found += _broadcast(name, tensors[name], spec["of"], tensors[spec["of"]], spec["forms"])
    return found


def _last_dim(name: str, d: int, limits: dict) -> list[str]:
    found = []
    if limits.get("even") and d % 2:
        found.append(f"{name}'s last dimension must be even, got {d}")
    if "below" in limits and d >= limits["below"]:
        found.append(f"{name}'s last dimension must be below {limits['below']}, got {d}")
    if "multiple_of" in limits and d % limits["multiple_of"]:
        found.append(f"{name}'s last dimension must be a multiple of {limits['multiple_of']}, got {d}")
    return found


def _broadcast(name: str, t, of_name: str, of, forms: list[str]) -> list[str]:
    if t.dim() != of.dim():
        return []  # the rank rule says it
    for form in forms:
        if len(form) == t.dim() and all(
                (size == full) if mark == "=" else (size == 1)
                for mark, size, full in zip(form, t.shape, of.shape, strict=True)):
            return []
    return [f"{name} {_shape(t)} is not a form the op broadcasts against {of_name} {_shape(of)} "
            f"(accepted: {', '.join(forms)}, '=' the same size, '1' broadcast)"]


def enforce(op: str, operands: dict) -> None:
    found = violations(op, operands)
    if found:
        raise ContractViolation(f"{op.split('::', 1)[-1]}: " + "; ".join(found))
