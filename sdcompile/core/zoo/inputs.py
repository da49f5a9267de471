"""Example inputs as data: turn the input specs of the zoo catalog into forward kwargs, and cast them.

The spec forms are documented at the top of `sdcompile/catalogs/zoo.toml`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from sdcompile.core.zoo.recipes import RECIPES
from sdcompile.core.zoo.toml_values import tupled

_DTYPES = {"float": torch.float32, "long": torch.long, "bool": torch.bool, "int": torch.int32}


class InputSpecError(ValueError):
    """A catalog input spec that cannot be materialised (a catalog bug, reported with its path)."""


def _dtype(spec: Mapping[str, Any], where: str) -> torch.dtype:
    name = spec.get("dtype", "float")
    if name not in _DTYPES:
        raise InputSpecError(f"{where}: dtype {name!r} is not one of {', '.join(_DTYPES)}")
    return _DTYPES[name]


def materialize(spec: Any, where: str) -> Any:
    """One input value from its spec (float tensors in float32; `cast_floating` applies the model dtype)."""
    if not isinstance(spec, Mapping):
        raise InputSpecError(f"{where}: an input spec is a table such as {{ randn = [1, 4] }}, not {spec!r}")
    if "randn" in spec:
        generator = torch.Generator("cpu").manual_seed(int(spec.get("seed", 0)))
        return torch.randn(*spec["randn"], generator=generator)
    if "ones" in spec:
        return torch.ones(*spec["ones"], dtype=_dtype(spec, where))
    if "zeros" in spec:
        return torch.zeros(*spec["zeros"], dtype=_dtype(spec, where))
    if "tensor" in spec:
        # Like torch.tensor: integer literals give a long tensor, floats a float one, unless dtype says otherwise.
        return torch.tensor(spec["tensor"], dtype=_dtype(spec, where) if "dtype" in spec else None)
    if "value" in spec:
        return tupled(spec["value"])
    if spec.get("none"):
        return None
    if "mapping" in spec:
        return {k: materialize(v, f"{where}.{k}") for k, v in spec["mapping"].items()}
    if "sequence" in spec:
        return [materialize(v, f"{where}[{i}]") for i, v in enumerate(spec["sequence"])]
    if "recipe" in spec:
        return run_recipe(spec, where)
    raise InputSpecError(f"{where}: unknown input spec {dict(spec)!r}")


def run_recipe(spec: Mapping[str, Any], where: str) -> Any:
    name = spec["recipe"]
    if name not in RECIPES:
        raise InputSpecError(f"{where}: unknown recipe {name!r}; recipes are {', '.join(sorted(RECIPES))}")
    args = {k: v for k, v in spec.items() if k != "recipe"}
    return RECIPES[name](**args)


def materialize_inputs(entry: Mapping[str, Any], where: str) -> dict[str, Any]:
    """All forward kwargs of a zoo entry: its `inputs` table, then whatever its `input_recipes` add."""
    kwargs = {name: materialize(spec, f"{where}.inputs.{name}") for name, spec in entry.get("inputs", {}).items()}
    for i, spec in enumerate(entry.get("input_recipes", ())):
        produced = run_recipe(spec, f"{where}.input_recipes[{i}]")
        if not isinstance(produced, Mapping):
            raise InputSpecError(f"{where}.input_recipes[{i}]: recipe {spec['recipe']!r} must return a dict of kwargs")
        kwargs.update(produced)
    return kwargs


def cast_floating(value: Any, dtype: torch.dtype) -> Any:
    """Floating tensors (also inside tuples, lists and dicts) in `dtype`; everything else unchanged."""
    if isinstance(value, torch.Tensor):
        return value.to(dtype) if value.is_floating_point() else value
    if isinstance(value, tuple):
        return tuple(cast_floating(v, dtype) for v in value)
    if isinstance(value, list):
        return [cast_floating(v, dtype) for v in value]
    if isinstance(value, dict):
        return {k: cast_floating(v, dtype) for k, v in value.items()}
    return value


def flat_tensors(value: Any, name: str) -> list[tuple[str, torch.Tensor]]:
    """Every tensor inside an input, with a readable path: `image_rotary_emb[0]`, `added_cond_kwargs.x`."""
    if isinstance(value, torch.Tensor):
        return [(name, value)]
    if isinstance(value, (tuple, list)):
        return [item for i, v in enumerate(value) for item in flat_tensors(v, f"{name}[{i}]")]
    if isinstance(value, Mapping):
        return [item for k, v in value.items() for item in flat_tensors(v, f"{name}.{k}")]
    return []
