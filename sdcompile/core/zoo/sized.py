"""Building a diffusers class at a chosen size: `--size tiny|real`, `--config`, `--num-layers`, `--model-capture`,
and `--inputs` over whatever inputs the build made.

    module, inputs, notes = build_sized(spec, seed)     # spec.kind "class", "capture", or "zoo" at real size
    inputs = override_inputs(module, inputs, path)      # --inputs for a zoo model's or a factory's inputs

`notes[0]` is the size for labels ("real config"); the rest say what the config and the inputs were.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sdcompile.core.zoo.any_class import build_class, layer_rules, model_class, shrink
from sdcompile.core.zoo.capture_file import read_header, read_inputs
from sdcompile.core.zoo.config_file import config_path as file_of
from sdcompile.core.zoo.config_file import constructor_arguments, read_config
from sdcompile.core.zoo.input_file import check_names, materialized, read_specs
from sdcompile.core.zoo.memory import check_fits, estimate
from sdcompile.core.zoo.synthesis import shown
from sdcompile.util.errors import BadInput


def build_sized(spec, seed: int) -> tuple[Any, dict[str, Any], tuple[str, ...]]:
    if spec.kind == "capture":
        return _replay(spec, seed)

    build = spec.build
    class_name = spec.model_class_name
    cls = model_class(class_name)
    base, source, ignored = base_config(cls, build.config)
    given = given_specs(build.inputs)
    if given:
        from sdcompile.core.zoo.input_file import check_names

        check_names(cls.forward, given, build.inputs)
    built = build_class(class_name, seed, size=build.effective_size, base=base, num_layers=build.num_layers,
                        given=given, cls=cls)
    changed = f"; {', '.join(built.changed)}" if built.changed else ""
    notes = [f"{built.size} config", f"size {built.size}: {source}{changed}"]
    if ignored:
        notes.append(f"--config fields {cls.__name__} does not take, left out: {', '.join(ignored)}")
    made = {k: v for k, v in built.specs.items() if k not in given}
    notes.append(f"inputs synthesized: {shown(made)}" if made else "inputs: all from --inputs")
    if given:
        notes.append(f"inputs from {build.inputs}: {', '.join(given)}")
    return built.module, built.inputs, tuple(notes)


def base_config(cls, config_path: Path | None) -> tuple[dict[str, Any] | None, str, tuple[str, ...]]:
    """(the config to size: None for the class's defaults, where it came from, --config fields left out)."""
    if config_path is None:
        return None, "the class's default config", ()

    _class_name, config = read_config(config_path)
    taken, ignored = constructor_arguments(cls, config)
    return taken, f"{file_of(config_path)}", ignored


def given_specs(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}

    data = read_specs(path)
    if data.get("input_recipes"):
        raise BadInput(f"--inputs {path}: input_recipes apply to zoo models and factories only",
                       "write each argument in the [inputs] table")
    return dict(data["inputs"])


def _replay(spec, seed: int) -> tuple[Any, dict[str, Any], tuple[str, ...]]:
    """A captured model: its recorded class and config (--num-layers applied), random weights, the recorded inputs."""
    import importlib

    import torch

    build = spec.build
    header = read_header(build.capture)
    try:
        cls = getattr(importlib.import_module(header.module), header.qualname)
    except (ImportError, AttributeError) as exc:
        fix = (f"install the diffusers release it was captured with ({header.versions.get('diffusers')})"
               if header.module.startswith("diffusers.") else
               f"make {header.module} importable here (PYTHONPATH), or capture the diffusers class it subclasses")
        raise BadInput(f"--model-capture {build.capture} records {header.module}.{header.qualname}, which cannot be "
                       f"imported here ({exc})", fix) from exc
    config, ignored = constructor_arguments(cls, header.config)
    changed: tuple[str, ...] = ()
    if build.num_layers is not None:
        config, changed = shrink(config, layer_rules(), build.num_layers)
    check_fits(estimate(cls, config), f"{header.qualname} as captured",
               "pass --num-layers 1 (one block of each kind; the captured inputs keep their shapes)")
    torch.manual_seed(seed)
    module = cls(**config).eval()
    inputs = read_inputs(build.capture)
    notes = [f"captured config{f', {build.num_layers} layer(s)' if build.num_layers else ''}",
             f"config recorded {header.created} on {header.device or 'an unknown device'}"
             + (f"; {', '.join(changed)}" if changed else ""),
             f"inputs recorded: {', '.join(f'{k} {v}' for k, v in header.calls[0].items())}"]
    if ignored:
        notes.append(f"recorded config fields {header.qualname} does not take here, left out: {', '.join(ignored)}")
    return module, inputs, tuple(notes)


def override_inputs(module, inputs: dict[str, Any], path: Path) -> dict[str, Any]:
    """`inputs` with the arguments --inputs gives replaced (or added), after the forward's names are checked."""

    data = read_specs(path)
    config = getattr(module, "config", None)
    given = materialized(data, path, dict(config) if config is not None else None)
    check_names(module.forward, given, path)
    return {**inputs, **given}
