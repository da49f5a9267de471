"""`--model <any diffusers transformer class>` beyond the zoo: its constructor's defaults, shrunk, random weights,
and example inputs synthesized from its forward (synthesis.py) — the first size and inputs that run one forward.

    listed("CogView4Transformer2DModel")   # True when the installed diffusers exports it (read without importing)
    model_name("CogView4Transformer2DModel")  # "cog_view4": the workspace's and the generated names' model word
    built = build_class("CogView4Transformer2DModel")  # -> ClassBuild(module, inputs, size, config, specs)

The sizes (catalogs/any_model.toml [[size]]) go from smallest (one block of each kind, two attention heads) to
larger; the shrink rules are regexes over constructor argument names, so nothing here knows a model by name.
"""

from __future__ import annotations

import importlib.util
import inspect
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from sdcompile.core.zoo.synthesis import FACTORY_FIX, attempts, catalog, plan_arguments, shown
from sdcompile.util.errors import BadInput

_SUFFIX = re.compile(r"(Transformer)?(\dD)?(Model)?$")


@cache
def _exported_names() -> str:
    spec = importlib.util.find_spec("diffusers")
    if spec is None or spec.origin is None:
        return ""
    with open(spec.origin, encoding="utf-8") as fh:  # its lazy import table names every public class
        return fh.read()


def listed(class_name: str) -> bool:
    """Whether the installed diffusers exports `class_name` (a transformer or any model class), without importing
    diffusers: it decides at import whether this is an NPU host, so it waits for the device to be chosen."""
    return class_name.isidentifier() and f'"{class_name}"' in _exported_names()


def transformer_classes() -> tuple[str, ...]:
    """The transformer model classes the installed diffusers exports (read without importing it)."""
    return tuple(sorted(set(re.findall(r'"(\w+Transformer\w*Model)"', _exported_names()))))


def model_name(class_name: str) -> str:
    """The model word for a class: its name without `Transformer2DModel`-style endings, in snake case."""
    stem = _SUFFIX.sub("", class_name) or class_name
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", stem).lower()


@dataclass(frozen=True)
class ClassBuild:
    module: Any  # torch.nn.Module, eval mode, float32
    inputs: dict[str, Any]
    size: str  # the [[size]] that ran
    changed: tuple[str, ...]  # "num_layers 30 -> 1", what the size changed in the default config
    specs: Mapping[str, Any]  # the synthesized inputs as zoo input specs


def constructor_defaults(cls) -> dict[str, Any]:
    """The class's default config: every constructor argument's default (BadInput for one without)."""
    params = inspect.signature(cls.__init__).parameters
    missing = [n for n, p in params.items() if n != "self" and p.default is inspect.Parameter.empty
               and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if missing:
        raise BadInput(f"{cls.__name__}'s constructor has no default for {', '.join(missing)}",
                       "write a factory that builds it and pass --model-file path.py:build")
    return {n: p.default for n, p in params.items() if n != "self" and p.default is not inspect.Parameter.empty}


def shrink(config: Mapping[str, Any], rules: list[str]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """`config` with the named [shrink] rules applied, and what they changed."""
    table = catalog()["shrink"]
    out, changed = dict(config), []
    for name in rules:
        rule = table[name]
        pattern, to = re.compile(rule["fields"]), rule["to"]
        for field, value in config.items():
            if not pattern.search(field) or field not in out or out[field] != value:
                continue  # another rule has already set it
            new = _shrunk(value, rule["kind"], to)
            if new is not None and new != value:
                out[field] = new
                changed.append(f"{field} {value!r} -> {new!r}")
    return out, tuple(changed)


def _shrunk(value: Any, kind: str, to: int) -> Any:
    if kind == "count":
        return min(value, to) if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
    if kind == "indices" and isinstance(value, (list, tuple)) and all(isinstance(v, int) for v in value):
        return type(value)(v for v in value if v < to)
    return None


def build_class(class_name: str, seed: int = 0) -> ClassBuild:
    """The first [[size]] of `class_name` whose constructor and one forward with synthesized inputs both run."""
    import diffusers
    import torch

    from sdcompile.core.zoo.inputs import InputSpecError, materialize_inputs

    cls = getattr(diffusers, class_name, None)
    if cls is None or not isinstance(cls, type) or not issubclass(cls, torch.nn.Module):
        raise BadInput(f"diffusers {diffusers.__version__} has no model class {class_name}",
                       "pass a diffusers transformer class (sdcompile models lists them) or --model-file")
    defaults = constructor_defaults(cls)
    failures: list[str] = []
    for size in catalog()["size"]:
        config, changed = shrink(defaults, size["rules"])
        torch.manual_seed(seed)
        try:
            module = cls(**config).eval()
        except Exception as exc:  # noqa: BLE001 - a size the class cannot be built at: the next one
            failures.append(f"{size['name']}: {cls.__name__}(**config) raised {type(exc).__name__}: {exc}")
            continue
        plan = plan_arguments(cls.forward, module.config)
        for specs in attempts(plan):
            try:
                inputs = materialize_inputs({"inputs": specs}, f"{class_name} inputs")
                with torch.no_grad():
                    module(**inputs)
            except (Exception, InputSpecError) as exc:  # noqa: BLE001 - not this combination: the next one
                failures.append(f"{size['name']}, {shown(specs)}: {type(exc).__name__}: {_first_line(exc)}")
                continue
            return ClassBuild(module, inputs, size["name"], changed, specs)
    last = failures[-1] if failures else "no size in catalogs/any_model.toml"
    raise BadInput(f"cannot build {class_name} with synthesized inputs ({len(failures)} attempts; the last: {last})",
                   FACTORY_FIX)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else "")[:200]
