"""Example inputs for a diffusers transformer nobody wrote a factory for: from its forward's signature, its config and
the argument roles of catalogs/any_model.toml, as input specs in the zoo's language (catalogs/zoo.toml).

    plan = plan_arguments(cls.forward, module.config, module=module)  # BadInput naming an argument it cannot make
    for specs in attempts(plan):                        # every combination of the roles' candidates, in order
        module(**materialize_inputs({"inputs": specs}, ...))

Which candidate fits (an image latent [B, C, H, W], a video latent [B, C, F, H, W] or packed tokens [B, S, C]) is
not guessed from the class's name: the caller runs one forward per attempt and keeps the first that runs.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import json
import math
import operator
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from sdcompile.catalogs import load
from sdcompile.core.zoo.argument_use import documented_shapes, uses
from sdcompile.util.errors import BadInput

MAX_ATTEMPTS = 64  # forwards tried before giving up; a tiny model's forward takes milliseconds
MAX_COMBINATIONS = 100_000  # beyond this many, combinations are tried in the catalog's order without sorting


def way_out(class_name: str, argument: str | None = None, tried: Mapping[str, Any] | None = None) -> str:
    """The fix when synthesis cannot make the forward's inputs: --inputs, or a factory to edit. `tried`: the spec
    the argument was made by first, shown as a TOML line to correct."""
    line = inline_table(tried) if tried else None
    given = ("give the forward's arguments with --inputs FILE (an [inputs] table)" if not argument else
             f"pass it with --inputs FILE ([inputs] {argument} = {line}: what was tried first, to correct)" if line
             else f"pass it with --inputs FILE ([inputs] {argument} = {{ randn = [<its shape>] }})")
    return (f"{given} in the zoo's input language, or write a factory with `sdcompile new-model {class_name} --out "
            "model.py`, edit it, and pass --model-file model.py:build")
ALWAYS_DEFAULT = ("return_dict", "attention_kwargs", "joint_attention_kwargs", "kv_cache", "kv_cache_mode")


@cache
def catalog() -> dict[str, Any]:
    return load("any_model")


def inline_table(spec: Mapping[str, Any]) -> str | None:
    """An input spec as a TOML inline table (`{ ones = [1, 16], dtype = "bool" }`); None for a nested one."""
    items = []
    for key, value in spec.items():
        scalars = value if isinstance(value, (list, tuple)) else [value]
        if not all(isinstance(v, (bool, int, float, str)) for v in scalars):
            return None
        texts = [("true" if v else "false") if isinstance(v, bool) else json.dumps(v) for v in scalars]
        items.append(f"{key} = {'[' + ', '.join(texts) + ']' if isinstance(value, (list, tuple)) else texts[0]}")
    return "{ " + ", ".join(items) + " }"


class NoForwardRan(BadInput):
    """The class constructs, but no forward ran with any inputs tried (`last`: the last attempt and what it raised)."""

    def __init__(self, message: str, fix: str, last: str):
        super().__init__(message, fix)
        self.last = last


class UnmakeableArgument(BadInput):
    """A required forward argument no example-input role can make (`argument` names it, `why` says why)."""

    def __init__(self, argument: str, why: str, fix: str, detail: str = ""):
        super().__init__(f"cannot make the forward argument {argument!r}: {why}{f' ({detail})' if detail else ''}",
                         fix)
        self.argument, self.why = argument, why


@dataclass(frozen=True)
class Argument:
    name: str
    candidates: tuple[Mapping[str, Any], ...]  # input specs with every symbol replaced by its value
    optional: bool  # the forward has a default: filled (it may reach a primitive), left out when no attempt runs
    documented: Mapping[str, Any] | None = None  # at the shape the forward's docstring gives, when it differs
    learned: bool = False  # no [[role]] names it: its candidates come from the forward's use of it


def _config_value(config: Mapping[str, Any], fields: list[str]) -> Any:
    """The first of `fields` the config has (not None), else a field named with a prefix (`dit_text_dim`)."""
    exact = next((config[f] for f in fields if config.get(f) is not None), None)
    if exact is not None:
        return exact
    return next((config[k] for f in fields for k in config if k.endswith(f"_{f}") and config[k] is not None), None)


def _in_and_out_width(config: Mapping[str, Any], module: Any) -> int | None:
    """The smallest config value that is both a layer's input width and a layer's output width: the latent
    channels, under whatever name the class gives them (latents go in through one layer and out through another)."""
    import torch

    widths_in, widths_out = set(), set()
    for layer in module.modules():
        if isinstance(layer, torch.nn.Linear):
            widths_in.add(layer.in_features)
            widths_out.add(layer.out_features)
        elif isinstance(layer, torch.nn.modules.conv._ConvNd):
            widths_in.add(layer.in_channels)
            widths_out.add(layer.out_channels)
    found = [v for v in config.values() if isinstance(v, int) and not isinstance(v, bool) and v > 2
             and v in widths_in and v in widths_out]
    return min(found, default=None)


def _patch(config: Mapping[str, Any]) -> tuple[int, int]:
    """(spatial, temporal) patch size: `patch_size` an int or a (t, h, w) / (h, w) tuple, `patch_size_t` apart."""
    patch = config.get("patch_size") or 1
    sizes = tuple(patch) if isinstance(patch, (tuple, list)) else (patch,)
    temporal = config.get("patch_size_t") or (sizes[0] if len(sizes) == 3 else 1)
    return int(sizes[-1]), int(temporal)


def symbols(config: Mapping[str, Any], module: Any = None) -> dict[str, Any]:
    """The values input specs may name: the geometry's and the config's (None where the class has no such field);
    with the built `module`, C also from its layers when no field names it."""
    geometry = catalog()["geometry"]
    spatial, temporal = _patch(config)
    grid, frames = geometry["grid"], geometry["frames"]
    values: dict[str, Any] = {name: _config_value(config, fields) for name, fields in catalog()["symbols"].items()}
    if values.get("C") is None and module is not None:
        values["C"] = _in_and_out_width(config, module)
    axes = values.get("AXES")
    text = _config_value(config, geometry["text_tokens_fields"]) or geometry["text_tokens"]
    channels, latent = values.get("C"), values.get("C_LATENT")
    values.update(B=geometry["batch"], T=text, G=grid, H=grid * spatial, W=grid * spatial,
                  F=frames * temporal, NF=frames, S=grid * grid, SF=frames * grid * grid,
                  SA=geometry["audio_frames"],
                  C_PATCHED=channels * temporal * spatial * spatial if isinstance(channels, int) else None,
                  C_CONTEXT=channels - latent if isinstance(channels, int) and isinstance(latent, int) else None,
                  C_COND=2 * channels + 1 if isinstance(channels, int) else None, P=spatial, PT=temporal,
                  H_TILED=geometry["grid_tiled"] * spatial,
                  N_BLOCKS=_blocks(config) or None,
                  N_AXES=len(axes) if isinstance(axes, (tuple, list)) else None)
    return values


def _blocks(config: Mapping[str, Any]) -> int:
    """The blocks of every kind: the sum of the fields the [shrink] rules count as blocks (as --num-layers does)."""
    rules = [re.compile(r["fields"]) for r in catalog()["shrink"].values() if r.get("layers") and r["kind"] == "count"]
    return sum(v for k, v in config.items() if isinstance(v, int) and not isinstance(v, bool)
               and any(rule.search(k) for rule in rules))


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


def plan_arguments(forward, config: Mapping[str, Any], skip: tuple[str, ...] = (), module: Any = None
                   ) -> list[Argument]:
    """What to pass `forward`: every argument a role can make (required or not), each with its candidates, and every
    required one no role names, learned from the forward's source ([learned]); `skip`: arguments given otherwise
    (--inputs); `module`: the built model (its layers and submodules tell C and uses apart). BadInput names a
    required argument no candidate can be made for."""
    values = symbols(config, module)
    shapes, used = documented_shapes(forward), uses(forward, module)
    plan = []
    for name, parameter in inspect.signature(forward).parameters.items():
        if name == "self" or parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        if name in ALWAYS_DEFAULT or name in skip:
            continue
        required = parameter.default is inspect.Parameter.empty
        shape = _documented_shape(shapes.get(name, ()), values, config)
        role = _role_of(name)
        if role is None:
            if required:
                plan.append(Argument(name, _learned(used.get(name, "values"), shape, values), optional=False,
                                     learned=True))
            continue
        candidates = tuple(c for c in (resolve(spec, values) for spec in role["candidates"]) if c is not None)
        if not candidates:
            if required:
                named = set().union(*(spec_symbols(spec) for spec in role["candidates"]))
                missing = {s for s in named if s in values and values[s] is None}
                fields = sorted(missing & set(catalog()["symbols"])) or sorted(missing)  # config fields, not derived
                raise UnmakeableArgument(name, f"the config has none of the fields its shape needs "
                                         f"({', '.join(fields)})", way_out(_class_of(forward), name))
            continue
        plan.append(Argument(name, candidates, optional=not required,
                             documented=_documented(candidates[0], used.get(name), shape)))
    return plan


def _documented_shape(words: tuple[str, ...], values: Mapping[str, Any], config: Mapping[str, Any]
                      ) -> list[int] | None:
    """A docstring's shape in numbers: a number, a config field's value, a symbol by [learned.dims], or arithmetic
    of those (`1 + len(injection_layer_ids)`); None when one word is none of these."""
    if not words:
        return None
    dims = catalog()["learned"]["dims"]

    def word_value(word: str) -> int | None:
        field = config.get(word)
        symbol = next((s for s, names in dims.items() if word in names), None)
        value = int(word) if word.isdigit() else field if isinstance(field, int) and not isinstance(field, bool) \
            else values.get(symbol) if symbol else None
        return value if isinstance(value, int) else None

    shape = [word_value(word) if word.isidentifier() or word.isdigit() else _dimension(word, word_value, config)
             for word in words]
    return None if any(d is None for d in shape) else shape


_ARITHMETIC = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv}


def _dimension(text: str, word_value, config: Mapping[str, Any]) -> int | None:
    """A documented dimension written as arithmetic of words and `len(config field)`; None when it is anything else."""
    def value(node: ast.AST) -> int | None:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Name):
            return word_value(node.id)
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
            left, right = value(node.left), value(node.right)
            return None if left is None or right is None else _ARITHMETIC[type(node.op)](left, right)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len"
                and len(node.args) == 1 and isinstance(node.args[0], ast.Name)):
            field = config.get(node.args[0].id)
            return len(field) if isinstance(field, list | tuple) else None
        return None

    try:
        return value(ast.parse(text, mode="eval").body)
    except (SyntaxError, ValueError, ArithmeticError):  # not an expression, or `// 0` from a config of zeros
        return None


def _use_spec(use: str, shape: list) -> dict[str, Any]:
    template = catalog()["learned"]["use"][use]
    return {k: list(shape) if v == "SHAPE" else v for k, v in template.items()}


def _learned(use: str, shape: list[int] | None, values: Mapping[str, Any]) -> tuple[Mapping[str, Any], ...]:
    """An argument no role names, as its use makes it: at its documented shape, then at each of [learned] shapes."""
    shapes = [shape] if shape else []
    for symbolic in catalog()["learned"]["shapes"]:
        resolved = resolve(symbolic, values)
        if resolved is not None and resolved not in shapes:
            shapes.append(resolved)
    return tuple(_use_spec(use, s) for s in shapes)


def _documented(first: Mapping[str, Any], use: str | None, shape: list[int] | None) -> Mapping[str, Any] | None:
    """A role's argument at the shape the docstring gives, when its first candidate has another: its random tensor
    reshaped, or what its use makes (positions, ids, a mask); None when nothing says how to make it."""
    if shape is None or _spec_shape(first) == shape:
        return None
    if "randn" in first:
        return {**first, "randn": list(shape)}
    return _use_spec(use, shape) if use in ("ids", "mask", "positions") else None


def _spec_shape(spec: Mapping[str, Any]) -> list[int] | None:
    for kind in ("randn", "zeros", "ones"):
        if kind in spec:
            return list(spec[kind])
    if "tensor" in spec:
        shape, value = [], spec["tensor"]
        while isinstance(value, list):
            shape.append(len(value))
            value = value[0] if value else None
        return shape
    return None


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
    """Input specs to try, in order: the required arguments' first candidates with the optional arguments all filled
    (their first candidates), then with optional arguments left out (one, then all: a `guidance` the config does not
    embed), then every combination that changes one argument (another candidate of a required or an optional one),
    each with the optional arguments filled then left out, then two, and so on; combinations that change as many are
    tried in the catalog's order. So a layout the catalog lists late (a video latent's packed tokens) is tried before
    the other arguments' candidates are combined with it."""
    required = [a for a in plan if not a.optional]
    extras = _optional_variants([a for a in plan if a.optional])
    first = extras[0]
    changed = [sum(1 for k, v in e.items() if first[k] != v) for e in extras]  # optional ones on another candidate
    left_out = [len(first) - len(e) for e in extras]

    def rank(ix: tuple[int, ...]) -> tuple[int, int, tuple[int, ...]]:  # ix: each required one's candidate, extras'
        return sum(i > 0 for i in ix[:-1]) + changed[ix[-1]], left_out[ix[-1]], ix

    sizes = [len(a.candidates) for a in required] + [len(extras)]
    order = itertools.product(*(range(n) for n in sizes))
    if math.prod(sizes) <= MAX_COMBINATIONS:
        order = iter(sorted(order, key=rank))
    documented = _documented_attempt(plan)
    first_documented = documented is not None and any(a.learned for a in plan)
    if first_documented:
        limit -= 1
        yield documented
    for *chosen, extra in itertools.islice(order, limit):
        specs = {**{a.name: a.candidates[i] for a, i in zip(required, chosen, strict=True)}, **extras[extra]}
        if specs != documented:
            yield specs
    if documented is not None and not first_documented:
        yield documented  # the catalog's layouts all failed: the docstring's shapes, as a last try


def _documented_attempt(plan: list[Argument]) -> dict[str, Mapping[str, Any]] | None:
    """Every argument at its documented shape: first when some argument is learned (one sequence length for all of
    a packed sequence's per-token arguments), else last (the catalog's order is kept for every other class); None
    when the docstring gives no other shape."""
    if not any(a.learned or a.documented is not None for a in plan):
        return None
    return {a.name: a.documented or a.candidates[0] for a in plan}


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
