"""`--model <any diffusers transformer class>` beyond the zoo: its constructor's defaults, shrunk, random weights,
and example inputs synthesized from its forward (synthesis.py) — the first size and inputs that run one forward.

    listed("CogView4Transformer2DModel")   # True when the installed diffusers exports it (read without importing)
    model_name("CogView4Transformer2DModel")  # "cog_view4": the workspace's and the generated names' model word
    built = build_class("CogView4Transformer2DModel")  # -> ClassBuild(module, inputs, size, config, specs)

The sizes (catalogs/any_model.toml [[size]]) go from smallest (one block of each kind, two attention heads) to
larger; the shrink rules are regexes over constructor argument names, so nothing here knows a model by name. At
real size (`--size real`, `--config`) the base config is built as it is, with `--num-layers N` applied to every
block-count field by the rules marked `layers`, as MindIE-SD's dummy runs build a model from its real config.
"""

from __future__ import annotations

import importlib.util
import inspect
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from sdcompile.core.zoo.input_file import resolve_given
from sdcompile.core.zoo.memory import check_fits, estimate, fits
from sdcompile.core.zoo.raised_at import first_line, model_frame
from sdcompile.core.zoo.synthesis import (
    NoForwardRan,
    UnmakeableArgument,
    attempts,
    catalog,
    plan_arguments,
    shown,
    way_out,
)
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
    size: str  # the [[size]] that ran, or "real"
    changed: tuple[str, ...]  # "num_layers 30 -> 1", what the size changed in the base config
    specs: Mapping[str, Any]  # the synthesized inputs as zoo input specs (--inputs ones included)
    parameters: int = 0


def constructor_defaults(cls) -> dict[str, Any]:
    """The class's default config: every constructor argument's default (BadInput for one without)."""
    params = inspect.signature(cls.__init__).parameters
    missing = [n for n, p in params.items() if n != "self" and p.default is inspect.Parameter.empty
               and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if missing:
        raise BadInput(f"{cls.__name__}'s constructor has no default for {', '.join(missing)}",
                       "pass its config with --config, or write a factory and pass --model-file path.py:build")
    return {n: p.default for n, p in params.items() if n != "self" and p.default is not inspect.Parameter.empty}


def shrink(config: Mapping[str, Any], rules: list[str], num_layers: int | None = None
           ) -> tuple[dict[str, Any], tuple[str, ...]]:
    """`config` with the named [shrink] rules applied, and what they changed; `num_layers` is the count the rules
    marked `layers` shrink block counts to (their own `to` when None)."""
    table = catalog()["shrink"]
    out, changed = dict(config), []
    for name in rules:
        rule = table[name]
        pattern = re.compile(rule["fields"])
        to = num_layers if num_layers is not None and rule.get("layers", False) else rule["to"]
        for field, value in config.items():
            if not pattern.search(field) or field not in out or out[field] != value:
                continue  # another rule has already set it
            new = _shrunk(value, rule["kind"], to)
            if new is not None and new != value:
                out[field] = new
                changed.append(f"{field} {value!r} -> {new!r}")
    return out, tuple(changed)


def layer_rules() -> list[str]:
    """The [shrink] rules --num-layers applies at real size (block counts and block indices)."""
    return [name for name, rule in catalog()["shrink"].items() if rule.get("layers", False)]


def block_counts(config: Mapping[str, Any]) -> dict[str, int]:
    """The fields of `config` that count blocks (the `layers` rules of kind count)."""
    table = catalog()["shrink"]
    patterns = [re.compile(r["fields"]) for r in table.values() if r.get("layers", False) and r["kind"] == "count"]
    return {k: v for k, v in config.items() if isinstance(v, int) and not isinstance(v, bool)
            and any(p.search(k) for p in patterns)}


def _shrunk(value: Any, kind: str, to: int) -> Any:
    if kind == "count":
        return min(value, to) if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
    if kind == "indices" and isinstance(value, (list, tuple)) and all(isinstance(v, int) for v in value):
        return type(value)(v for v in value if v < to)
    return None


def model_class(class_name: str):
    """The diffusers model class `class_name` (BadInput when this diffusers has none)."""
    import diffusers
    import torch

    cls = getattr(diffusers, class_name, None)
    if cls is None or not isinstance(cls, type) or not issubclass(cls, torch.nn.Module):
        raise BadInput(f"diffusers {diffusers.__version__} has no model class {class_name}",
                       "pass a diffusers transformer class (sdcompile models lists them) or --model-file")
    return cls


@dataclass(frozen=True)
class _Size:
    name: str
    config: dict[str, Any]
    changed: tuple[str, ...]


def _sizes(cls, size: str, base: Mapping[str, Any], num_layers: int | None) -> list[_Size]:
    """The configs to try, in order: the catalog's tiny sizes of `base`, or `base` itself with --num-layers."""
    if size == "real":
        config, changed = shrink(base, layer_rules(), num_layers) if num_layers is not None else (dict(base), ())
        return [_Size("real", config, changed)]
    return [_Size(s["name"], *shrink(base, s["rules"], num_layers)) for s in catalog()["size"]]


def _constructible(cls, attempt: _Size, failures: list[str]) -> tuple[_Size, Any]:
    """`attempt`, or it with the catalog's [[unset]] values for arguments left None, whichever constructs first
    (on the meta device: `estimate`), with its estimate; (attempt, None) when none does, each failure noted."""
    config, changed = dict(attempt.config), list(attempt.changed)
    unset = {f for f, v in config.items() if v is None}
    tried = [attempt]
    for level in catalog().get("unset", ()):
        filled = {f: v for f, v in level["fields"].items()
                  if f in unset and (config[f] is None or level.get("instead", False))}
        if filled:
            config |= filled
            changed += [f"{f} None -> {v!r}" for f, v in filled.items()]
            tried.append(_Size(attempt.name, dict(config), tuple(changed)))
    for candidate in tried:
        try:
            return candidate, estimate(cls, candidate.config)
        except Exception as exc:  # noqa: BLE001 - this config does not construct: the next one
            failures.append(f"{candidate.name}: {cls.__name__}(**config) raised {type(exc).__name__}: {exc}")
    return attempt, None


def first_size(cls, size: str, base: Mapping[str, Any] | None, num_layers: int | None
               ) -> tuple[str, dict[str, Any], tuple[str, ...]]:
    """(name, config, changed) of the first size `build_class` tries (with [[unset]] values where its config needs
    them to construct)."""
    first = _sizes(cls, size, dict(base) if base is not None else constructor_defaults(cls), num_layers)[0]
    first, _need = _constructible(cls, first, [])
    return first.name, first.config, first.changed


def build_class(class_name: str, seed: int = 0, *, size: str = "tiny", base: Mapping[str, Any] | None = None,
                num_layers: int | None = None, given: Mapping[str, Any] | None = None, cls=None) -> ClassBuild:
    """`class_name` built from `base` (its constructor's defaults when None): at "tiny", the first catalog size whose
    constructor and one forward with synthesized inputs both run; at "real", `base` with `num_layers` applied.
    `given`: input specs (--inputs) used as they are, the rest synthesized. A size too large for this machine's
    memory is skipped at tiny and refused (exit 2) at real."""
    import torch

    from sdcompile.core.zoo.inputs import InputSpecError, materialize_inputs

    cls = cls or model_class(class_name)
    given_base = base is not None
    base = dict(base) if base is not None else constructor_defaults(cls)
    given = dict(given or {})
    failures: list[str] = []
    learned: list[str] = []  # arguments no role names, made from the forward's use of them
    constructed = False
    for attempt in _sizes(cls, size, base, num_layers):
        attempt, need = _constructible(cls, attempt, failures)
        if need is None:  # a size the class cannot be built at, unset arguments filled or not: the next one
            continue
        constructed = True
        if size == "real":
            check_fits(need, f"{class_name} at real size", _layers_fix(num_layers))
        elif not fits(need):
            failures.append(f"{attempt.name}: {need.parameters} parameters, too large for this machine's memory")
            continue
        torch.manual_seed(seed)
        try:
            module = cls(**attempt.config).eval()
        except Exception as exc:  # noqa: BLE001 - as above
            failures.append(f"{attempt.name}: {cls.__name__}(**config) raised {type(exc).__name__}: {exc}")
            continue
        plan = plan_arguments(cls.forward, module.config, skip=tuple(given), module=module)
        learned = [a.name for a in plan if a.learned]
        fixed = resolve_given(given, module.config, "--inputs")
        for specs in attempts(plan):
            specs = {**specs, **fixed}
            try:
                inputs = materialize_inputs({"inputs": specs}, f"{class_name} inputs")
                with torch.no_grad():
                    module(**inputs)
            except (Exception, InputSpecError) as exc:  # noqa: BLE001 - not this combination: the next one
                where = model_frame(exc)  # the line of the class's forward to read, as every command names it
                failures.append(f"{attempt.name}, {shown(specs)}: {type(exc).__name__}: {first_line(exc)[:200]}"
                                + (f" ({where})" if where else ""))
                continue
            return ClassBuild(module, inputs, attempt.name, attempt.changed, specs, need.parameters)
        del module
    last = failures[-1] if failures else "no size in catalogs/any_model.toml"
    if not constructed:  # no input can help: the config is what the class needs
        raise BadInput(f"cannot build {class_name} from {'this' if given_base else 'its default'} config "
                       f"({len(failures)} attempts; the last: {last})",
                       "check that the config is this class's (its config.json's _class_name)" if given_base else
                       "pass the model's config.json with --config FILE (from its Hugging Face repository, the "
                       "transformer folder; no weights are read)")
    if learned and not given:
        # the arguments sdcompile guessed are the likely cause: named, so a factory can leave them to the user
        raise UnmakeableArgument(learned[0], "no example-input role names it, and no forward ran with it made as "
                                 "the forward's docstring and use of it suggest",
                                 way_out(class_name, learned[0], next(a for a in plan if a.learned).candidates[0]),
                                 detail=f"{len(failures)} attempts; the last: {last}")
    raise NoForwardRan(f"cannot build {class_name} with {'these' if given else 'synthesized'} inputs "
                       f"({len(failures)} attempts; the last: {last})", way_out(class_name), last)


def _layers_fix(num_layers: int | None) -> str:
    if num_layers is None or num_layers > 1:
        return ("pass --num-layers 1 (one block of each kind, real widths), or set $SDCOMPILE_MEMORY_GB when more "
                "memory is free than the kernel reports")
    return "use --size tiny, or a machine with more memory ($SDCOMPILE_MEMORY_GB overrides the check)"
