"""What each placeholder and get_attr node holds, stage by stage: which parameter, buffer, tensor attribute or
input it is, followed from dynamo's graph through AOT to freeze()'s output."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sdcompile.core.torchcompat.dynamo import tracing_params_flat


@dataclass(frozen=True)
class TensorOrigin:
    """What a placeholder or get_attr node holds."""

    kind: str  # "parameter" | "buffer" | "tensor attribute" | "input" | "constant" | "folded constant" | "unknown"
    name: str  # "transformer_blocks.0.attn.norm_q.weight", "hidden_states", "_tensor_constant0"

    @property
    def is_module_attribute(self) -> bool:
        return self.kind in ("parameter", "buffer", "tensor attribute")

    def describe(self) -> str:
        return f"{self.kind} {self.name}"


def tensor_identities(module, inputs: Mapping[str, Any]) -> dict[int, TensorOrigin]:
    """id(tensor) -> what it is in the model: parameters, buffers, plain tensor attributes, inputs."""
    import torch

    from sdcompile.core.zoo.inputs import flat_tensors

    found: dict[int, TensorOrigin] = {}
    for name, p in module.named_parameters(remove_duplicate=False):
        found.setdefault(id(p), TensorOrigin("parameter", name))
    for name, b in module.named_buffers(remove_duplicate=False):
        found.setdefault(id(b), TensorOrigin("buffer", name))
    for owner_name, owner in module.named_modules():
        for attr, value in vars(owner).items():
            if isinstance(value, torch.Tensor) and id(value) not in found:
                found[id(value)] = TensorOrigin("tensor attribute", f"{owner_name}.{attr}" if owner_name else attr)
    for kw, value in inputs.items():
        for path, tensor in flat_tensors(value, kw):
            found.setdefault(id(tensor), TensorOrigin("input", path))
    return found


def dynamo_origins(dynamo_gm, example_inputs, identities) -> dict[str, TensorOrigin]:
    origins: dict[str, TensorOrigin] = {}
    placeholders = dynamo_gm.graph.find_nodes(op="placeholder")
    for node, value in zip(placeholders, example_inputs, strict=False):
        origins[node.name] = identities.get(id(value), TensorOrigin("unknown", f"graph input {node.name}"))
    for node in dynamo_gm.graph.find_nodes(op="get_attr"):
        value = _resolve_attr(dynamo_gm, node.target)
        origins[node.name] = identities.get(id(value), TensorOrigin("constant", str(node.target)))
    return origins


def aot_origins(aot_gm, example_inputs, identities) -> dict[str, TensorOrigin]:
    """AOT placeholders are the TracingContext's params_flat (parameters dynamo kept as attributes) followed by
    dynamo's graph inputs, in that order."""

    values = tracing_params_flat() + list(example_inputs)
    placeholders = aot_gm.graph.find_nodes(op="placeholder")
    origins: dict[str, TensorOrigin] = {}
    aligned = len(placeholders) == len(values)
    for i, node in enumerate(placeholders):
        origin = identities.get(id(values[i])) if aligned else None
        origins[node.name] = origin or TensorOrigin("unknown", f"graph input {i}")
    for node in aot_gm.graph.find_nodes(op="get_attr"):
        origins[node.name] = TensorOrigin("constant", str(node.target))
    return origins


def frozen_origins(frozen_gm, aot_origins: Mapping[str, TensorOrigin]) -> dict[str, TensorOrigin]:
    """freeze() turns a parameter placeholder into a get_attr node of the same name (`arg34_1 =
    self._frozen_param34`); other get_attrs are constants it folded (e.g. a transposed weight)."""
    origins: dict[str, TensorOrigin] = {}
    for node in frozen_gm.graph.nodes:
        if node.op == "placeholder":
            origins[node.name] = aot_origins.get(node.name, TensorOrigin("unknown", node.name))
        elif node.op == "get_attr":
            known = aot_origins.get(node.name)
            if known is not None and known.kind != "constant":
                origins[node.name] = known
            else:
                origins[node.name] = TensorOrigin("folded constant", str(node.target))
    return origins


def _resolve_attr(gm, target: str):
    value = gm
    for part in str(target).split("."):
        value = getattr(value, part, None)
    return value
