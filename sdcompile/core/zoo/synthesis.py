"""Example inputs for a diffusers transformer nobody wrote a factory for: from its forward's signature, its config and
the argument roles of catalogs/any_model.toml, as input specs in the zoo's language (catalogs/zoo.toml).

    plan = plan_arguments(cls.forward, module.config)   # BadInput naming an argument no role can make
    for specs in attempts(plan):                        # every combination of the roles' candidates, in order
        module(**materialize_inputs({"inputs": specs}, ...))

Which candidate fits (an image latent [B, C, H, W], a video latent [B, C, F, H, W] or packed tokens [B, S, C]) is
not guessed from the class's name: the caller runs one forward per attempt and keeps the first that runs.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from sdcompile.util.errors import BadInput

MAX_ATTEMPTS = 64  # forwards tried before giving up; a tiny model's forward takes milliseconds


def way_out(class_name: str, argument: str | None = None) -> str:
    """The fix when synthesis cannot make the forward's inputs: --inputs, or a factory to edit."""
    given = (f"pass it with --inputs FILE ([inputs] {argument} = {{ randn = [...] }})" if argument else
             "give the forward's arguments with --inputs FILE (an [inputs] table)")
    return (f"{given} in the zoo's input language, or write a factory with `sdcompile new-model {class_name} --out "
            "model.py`, edit it, and pass --model-file model.py:build")
ALWAYS_DEFAULT = ("return_dict", "attention_kwargs", "joint_attention_kwargs", "kv_cache", "kv_cache_mode")


@cache
def catalog() -> dict[str, Any]:
    from sdcompile.catalogs import load

    return load("any_model")


class UnmakeableArgument(BadInput):
    """A required forward argument no example-input role can make (`argument` names it, `why` says why)."""

    def __init__(self, argument: str, why: str, fix: str):
        super().__init__(f"cannot make the forward argument {argument!r}: {why}", fix)
        self.argument, self.why = argument, why


@dataclass(frozen=True)
class Argument:
    name: str
    candidates: tuple[Mapping[str, Any], ...]  # input specs with every symbol replaced by its value
    optional: bool  # the forward has a default: filled (it may reach a primitive), left out when no attempt runs


def _config_value(config: Mapping[str, Any], fields: list[str]) -> Any:
    return next((config[f] for f in fields if config.get(f) is not None), None)


def _patch(config: Mapping[str, Any]) -> tuple[int, int]:
    """(spatial, temporal) patch size: `patch_size` an int or a (t, h, w) / (h, w) tuple, `patch_size_t` apart."""
    patch = config.get("patch_size") or 1
    sizes = tuple(patch) if isinstance(patch, (tuple, list)) else (patch,)
    temporal = config.get("patch_size_t") or (sizes[0] if len(sizes) == 3 else 1)
    return int(sizes[-1]), int(temporal)


def symbols(config: Mapping[str, Any]) -> dict[str, Any]:
    """The values input specs may name: the geometry's and the config's (None where the class has no such field)."""
    geometry = catalog()["geometry"]
    spatial, temporal = _patch(config)
    grid, frames = geometry["grid"], geometry["frames"]
    values: dict[str, Any] = {name: _config_value(config, fields) for name, fields in catalog()["symbols"].items()}
    axes = values.get("AXES")
    text = _config_value(config, geometry["text_tokens_fields"]) or geometry["text_tokens"]
    values.update(B=geometry["batch"], T=text, G=grid, H=grid * spatial, W=grid * spatial,
                  F=frames * temporal, S=grid * grid, SF=frames * grid * grid,
                  N_AXES=len(axes) if isinstance(axes, (tuple, list)) else None)
    return values


def resolve(spec: Any, values: Mapping[str, Any]) -> Any:
    """`spec` with every symbol (a string naming one) replaced by its value; None when one has no value here."""
    if isinstance(spec, str):
        return values.get(spec) if spec in values else spec
    if isinstance(spec, list):
        items = [resolve(v, values) for v in spec]
        return None if any(item is None for item in items) else items
    if isinstance(spec, Mapping):
        out = {}
        for key, value in spec.items():
            if key in ("dtype", "recipe"):
                out[key] = value
                continue
            item = resolve(value, values)
            if item is None:
                return None
            out[key] = item
        return out
    return spec


def _role_of(name: str) -> Mapping[str, Any] | None:
    return next((role for role in catalog()["role"] if name in role["names"]), None)


def plan_arguments(forward, config: Mapping[str, Any], skip: tuple[str, ...] = ()) -> list[Argument]:
    """What to pass `forward`: every argument a role can make (required or not), each with its candidates; `skip`:
    arguments given otherwise (--inputs). BadInput names a required argument no role can make."""
    values = symbols(config)
    plan = []
    for name, parameter in inspect.signature(forward).parameters.items():
        if name == "self" or parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        if name in ALWAYS_DEFAULT or name in skip:
            continue
        required = parameter.default is inspect.Parameter.empty
        role = _role_of(name)
        if role is None:
            if required:
                raise UnmakeableArgument(name, "no example-input role is known for it",
                                         way_out(_class_of(forward), name))
            continue
        candidates = tuple(c for c in (resolve(spec, values) for spec in role["candidates"]) if c is not None)
        if not candidates:
            if required:
                fields = sorted({s for spec in role["candidates"] for s in spec_symbols(spec) if values.get(s) is None})
                raise UnmakeableArgument(name, f"the config has none of the fields its shape needs "
                                         f"({', '.join(fields)})", way_out(_class_of(forward), name))
            continue
        plan.append(Argument(name, candidates, optional=not required))
    return plan


def _class_of(forward) -> str:
    """The class `forward` is defined on, for the way out's command (a placeholder for a plain function)."""
    parts = getattr(forward, "__qualname__", "").split(".")
    return parts[-2] if len(parts) >= 2 and parts[-2].isidentifier() else "CLASS"


def spec_symbols(spec: Any) -> set[str]:
    """Every string in an input spec's shapes and values: the symbols it may name."""
    if isinstance(spec, str):
        return {spec}
    if isinstance(spec, list):
        return set().union(*(spec_symbols(v) for v in spec)) if spec else set()
    if isinstance(spec, Mapping):
        return set().union(*(spec_symbols(v) for k, v in spec.items() if k not in ("dtype", "recipe")))
    return set()


def attempts(plan: list[Argument], limit: int = MAX_ATTEMPTS) -> Iterator[dict[str, Mapping[str, Any]]]:
    """Input specs to try, in order: every combination of the required arguments' candidates, with the optional
    arguments all filled (their first candidates), then one of them with its other candidates, then with each one
    left out (a `guidance` the config does not embed), then with none."""
    required = [a for a in plan if not a.optional]
    extras = _optional_variants([a for a in plan if a.optional])
    combos = itertools.product(*(a.candidates for a in required), extras)
    for combo in itertools.islice(combos, limit):
        *chosen, extra = combo
        yield {**{a.name: spec for a, spec in zip(required, chosen, strict=True)}, **extra}


def _optional_variants(optional: list[Argument]) -> list[dict[str, Mapping[str, Any]]]:
    first = {a.name: a.candidates[0] for a in optional}
    others = [{**first, a.name: c} for a in optional for c in a.candidates[1:]]
    left_out = [{k: v for k, v in first.items() if k != a.name} for a in optional] if len(optional) > 1 else []
    return [first, *others, *left_out, {}] if optional else [{}]


def shown(specs: Mapping[str, Any]) -> str:
    """`hidden_states randn[1, 16, 8, 8], timestep tensor[500.0]` for notes and messages."""
    parts = []
    for name, spec in specs.items():
        kind = next((k for k in ("randn", "ones", "zeros", "tensor", "value", "recipe", "sequence", "mapping")
                     if k in spec), "")
        shape = spec.get(kind) if kind not in ("recipe", "mapping") else spec.get("recipe", "{...}")
        parts.append(f"{name} {kind}{shape}" if kind != "recipe" else f"{name} {shape}")
    return ", ".join(parts)
