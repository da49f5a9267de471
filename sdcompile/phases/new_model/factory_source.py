"""The Python source of a factory for a diffusers class: its config and its synthesized inputs (zoo input specs,
catalogs/zoo.toml) spelled out as code, rendered through templates/model_factory.py.j2.

Every value reaches the file as a Python literal (`repr`, checked by `ast.literal_eval`) or as code built here
from such literals; the class name is a checked identifier. A recipe an input uses is copied in as its source, so
the file needs only torch and diffusers.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Mapping
from typing import Any

from sdcompile.core.zoo.toml_values import tupled
from sdcompile.phases.scaffold.sources import WIDTH, identifier, render

_DTYPES = {"float": "torch.float32", "long": "torch.long", "bool": "torch.bool", "int": "torch.int32"}


def literal(value: Any) -> str | None:
    """`repr(value)` when it is a Python literal that reads back equal, else None (left to the class's default)."""
    text = repr(value)
    try:
        return text if ast.literal_eval(text) == value else None
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def expression(spec: Mapping[str, Any], recipes: set[str]) -> str:
    """A zoo input spec as a Python expression (recipes it calls are added to `recipes`)."""

    if "randn" in spec:
        return (f"torch.randn({literal(list(spec['randn']))}, "
                f"generator=torch.Generator().manual_seed({int(spec.get('seed', 0))}))")
    for kind in ("ones", "zeros"):
        if kind in spec:
            return f"torch.{kind}({literal(list(spec[kind]))}, dtype={_DTYPES[spec.get('dtype', 'float')]})"
    if "tensor" in spec:
        dtype = f", dtype={_DTYPES[spec['dtype']]}" if "dtype" in spec else ""
        return f"torch.tensor({literal(spec['tensor'])}{dtype})"
    if "value" in spec:
        return literal(tupled(spec["value"])) or "None"
    if spec.get("none"):
        return "None"
    if "mapping" in spec:
        return "{" + ", ".join(f"{k!r}: {expression(v, recipes)}" for k, v in spec["mapping"].items()) + "}"
    if "sequence" in spec:
        return "[" + ", ".join(expression(v, recipes) for v in spec["sequence"]) + "]"
    name = spec["recipe"]
    recipes.add(name)
    args = ", ".join(f"{k}={literal(v)}" for k, v in spec.items() if k != "recipe")
    return f"{name}({args})"


def recipe_sources(names: set[str]) -> list[str]:
    from sdcompile.core.zoo.recipes import RECIPES

    return [inspect.getsource(RECIPES[name]).rstrip() for name in sorted(names)]


def factory_source(class_name: str, config: Mapping[str, Any], defaults: Mapping[str, Any], specs: Mapping[str, Any],
                   header: str, missing: Mapping[str, str] | None = None) -> str:
    """The factory file: CONFIG (each key the class's constructor takes, changed ones marked), INPUTS, build();
    `missing` arguments (name -> why sdcompile could not make it) are calls to fill_in() that raise until edited."""

    recipes: set[str] = set()
    entries, skipped = [], []
    for key, value in config.items():
        text = literal(value)
        if text is None:
            skipped.append(key)
            continue
        note = f"  # default {literal(defaults[key])}" if key in defaults and defaults[key] != value else ""
        entries.append((key, text, note))
    inputs = [(name, expression(spec, recipes)) for name, spec in specs.items()]
    inputs += [(identifier(name, "a forward argument"), f"fill_in({name!r}, {literal(why)})")
               for name, why in (missing or {}).items()]
    return render("model_factory.py.j2", {
        "header": textwrap.fill(header, WIDTH - 4, break_on_hyphens=False),
        "class_name": identifier(class_name, "the class name"), "config": entries,
        "skipped": skipped, "inputs": inputs, "recipes": recipe_sources(recipes), "missing": bool(missing),
    })
