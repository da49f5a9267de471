"""`--inputs FILE`: forward arguments written as data, overriding the ones sdcompile makes (or a factory returns).

    # inputs.toml: the zoo's input language (catalogs/zoo.toml); shapes may name the config's symbols
    # (catalogs/any_model.toml [symbols]: B, T, S, C, D_TEXT, ...)
    [inputs]
    img_mask = { ones = ["B", 24], dtype = "bool" }
    encoder_hidden_states = { randn = [1, 77, "D_TEXT"], seed = 1 }

    specs = read_specs(path)                       # {name: spec}, checked without torch
    kwargs = materialized(specs, path, config)    # symbols resolved against the model's config
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sdcompile.core.zoo.synthesis import resolve, spec_symbols, symbols
from sdcompile.util.errors import BadInput

_FIX = "write an [inputs] table of NAME = { randn = [shape] } entries (catalogs/zoo.toml lists the spec forms)"


def read_specs(path: Path) -> dict[str, Any]:
    """The file's [inputs] table (and its input_recipes, kept under their own key)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"cannot read --inputs {path}: {exc}", "pass a readable TOML file") from exc
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"--inputs {path} is not TOML ({exc})", _FIX) from exc
    extra = sorted(set(data) - {"inputs", "input_recipes"})
    if extra or not isinstance(data.get("inputs", {}), dict):
        raise BadInput(f"--inputs {path} holds {', '.join(extra) or 'inputs that are not a table'}; it takes an "
                       "[inputs] table (and input_recipes)", _FIX)
    if not data.get("inputs") and not data.get("input_recipes"):
        raise BadInput(f"--inputs {path} gives no argument", _FIX)
    bad = [name for name, spec in data.get("inputs", {}).items() if not isinstance(spec, dict)]
    if bad:
        raise BadInput(f"--inputs {path}: {', '.join(bad)} is not a table such as {{ randn = [1, 4] }}", _FIX)
    return data


def materialized(data: Mapping[str, Any], path: Path, config: Mapping[str, Any] | None) -> dict[str, Any]:
    """The file's arguments as values, its shapes' symbols resolved with `config` (None: no symbols)."""
    from sdcompile.core.zoo.inputs import InputSpecError, materialize_inputs

    resolved = resolved_specs(data, path, config)
    try:
        return materialize_inputs(resolved, f"--inputs {path}")
    except InputSpecError as exc:
        raise BadInput(str(exc), _FIX) from exc
    except (TypeError, ValueError, RuntimeError) as exc:  # a shape torch cannot take: a misspelt symbol, a float
        raise BadInput(f"--inputs {path}: {type(exc).__name__}: {exc}", _FIX) from exc


def resolved_specs(data: Mapping[str, Any], path: Path, config: Mapping[str, Any] | None) -> dict[str, Any]:
    """`data` with every symbol in its shapes replaced by the config's value; BadInput naming one it lacks."""
    return {"inputs": resolve_given(data.get("inputs", {}), config, f"--inputs {path}"),
            "input_recipes": list(data.get("input_recipes", ()))}


def resolve_given(specs: Mapping[str, Any], config: Mapping[str, Any] | None, where: str) -> dict[str, Any]:
    """Input specs with the config's symbols in their shapes replaced by values; BadInput naming a symbol the
    config does not give."""

    values = symbols(config or {})
    out = {}
    for name, spec in specs.items():
        value = resolve(spec, values)
        if value is None:
            unknown = sorted(s for s in spec_symbols(spec) if s in values and values[s] is None)
            raise BadInput(f"{where}: {name} names {', '.join(unknown) or 'a symbol'}, which this model's config "
                           "does not give", "write that size as a number")
        out[name] = value
    return out


def check_names(forward, names, path: Path) -> None:
    """BadInput when the file names an argument `forward` does not take (a typo would otherwise pass silently)."""
    import inspect

    params = inspect.signature(forward).parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return
    unknown = [n for n in names if n not in params]
    if unknown:
        from sdcompile.util.choices import closest

        hints = [f"{n} (did you mean {closest(n, params)}?)" if closest(n, params) else n for n in unknown]
        raise BadInput(f"--inputs {path} names {', '.join(hints)}, which the forward does not take",
                       f"use its arguments: {', '.join(p for p in params if p != 'self')}")
