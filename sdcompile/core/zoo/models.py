"""Which model a command runs on, and building it: the zoo (catalogs/zoo.toml) or the user's own file.

    spec  = resolve_model("flux")                         # zoo short name, or a diffusers class name
    spec  = resolve_model(model_file="mine.py:build")     # the user's factory: returns (module, kwargs)
    built = build_model(spec, "bf16")                     # or build_model("flux", "bf16")
    with built.forward_deadline():                       # --timeout: a forward that hangs ends with exit 2
        built.module(**built.inputs)

Call `sdcompile.core.npu.device.activate...()` before building: diffusers decides at import whether this is an
NPU host, and building imports it.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from sdcompile.core.zoo.toml_values import tupled
from sdcompile.util.errors import BadInput
from sdcompile.util.log import get_logger

log = get_logger(__name__)

DTYPE_ALIASES = {
    "bf16": "bf16", "bfloat16": "bf16",
    "fp16": "fp16", "float16": "fp16", "half": "fp16",
    "fp32": "fp32", "float32": "fp32", "float": "fp32",
}
DTYPES = ("bf16", "fp16", "fp32")


@dataclass(frozen=True)
class ZooEntry:
    name: str  # short name: "flux"
    class_name: str  # diffusers class: "FluxTransformer2DModel"
    note: str
    config: Mapping[str, Any]
    entry: Mapping[str, Any]  # the raw catalog table (inputs, input_recipes)


@dataclass(frozen=True)
class ModelSpec:
    """What to build. `name` is the workspace label: the zoo name, the class name in snake case (any_class), or
    `<file stem>-<factory>`."""

    kind: str  # "zoo", "class" (a diffusers class the zoo does not list) or "file"
    name: str
    zoo: ZooEntry | None = None
    path: Path | None = None
    factory: str | None = None
    class_name: str | None = None  # kind "class": the diffusers class

    @property
    def origin(self) -> str:
        if self.zoo is not None:
            return f"zoo: {self.zoo.name} = {self.zoo.class_name} (tiny config, random weights)"
        if self.class_name is not None:
            return f"diffusers class {self.class_name} (its default config shrunk, random weights, inputs synthesized)"
        return f"model file: {self.path}:{self.factory}"

    @property
    def model_option(self) -> str | None:
        """What `--model` takes to name this model again (None for a model file)."""
        return self.zoo.name if self.zoo is not None else self.class_name


@dataclass(frozen=True)
class BuiltModel:
    name: str  # workspace label
    label: str  # for people: "flux (FluxTransformer2DModel, tiny config)"
    module: Any  # torch.nn.Module in eval mode; floating parameters in `dtype` except those kept in fp32
    inputs: dict[str, Any]  # forward kwargs; floating tensors in `dtype`
    dtype: Any  # torch.dtype
    dtype_name: str  # "bf16" | "fp16" | "fp32"
    class_name: str  # "diffusers.models.transformers.transformer_flux.FluxTransformer2DModel"
    model_module: str  # the Python module defining the model class (decides "model-local" code)
    spec: ModelSpec
    timeout: float = 0.0  # seconds a build or forward of user code may take (0: no deadline), see deadline.py
    kept_fp32: tuple[str, ...] = ()  # parameters/buffers left in fp32 (`_keep_in_fp32_modules`, as from_pretrained)
    perturbed: tuple[str, ...] = ()  # parameters moved off the constant their init left them at (zoo models)
    build_seconds: float = 0.0
    notes: tuple[str, ...] = field(default_factory=tuple)

    def forward_deadline(self, stage: str = "forward"):
        """A context manager ending a forward of this model that runs past `timeout` with TimedOut (exit 2);
        `stage` names it ("forward", "compiled forward"). Put it outside an `except Exception` that records errors."""
        from sdcompile.core.zoo.deadline import deadline

        return deadline(self.timeout, _subject(self.spec), stage)


def _subject(spec: ModelSpec) -> str:
    # what a timeout names: the user's file and factory, or the zoo model
    if spec.kind == "class":
        return f"diffusers class {spec.class_name}"
    return f"{spec.path}:{spec.factory}" if spec.kind == "file" else f"zoo model {spec.name}"


# ------------------------------------------------------------------------------------------------- the zoo
@cache
def zoo_entries() -> dict[str, ZooEntry]:
    """The zoo catalog; reading it imports neither torch nor diffusers (name errors fail fast)."""
    from sdcompile.catalogs import load

    entries = {}
    for name, table in load("zoo")["model"].items():
        entries[name] = ZooEntry(
            name=name,
            class_name=table["class"],
            note=table.get("note", ""),
            config=tupled(dict(table.get("config", {}))),
            entry=table,
        )
    return entries


def known_names() -> str:
    return ", ".join(zoo_entries())


def _normal(name: str) -> str:
    return name.strip().lower().replace("-", "_")


def parse_dtype(name: str) -> str:
    """"bf16" / "bfloat16" / ... -> one of DTYPES; BadInput otherwise."""
    key = DTYPE_ALIASES.get(str(name).strip().lower())
    if key is None:
        from sdcompile.util.choices import UnknownChoice

        raise UnknownChoice("dtype", name, DTYPES)
    return key


def torch_dtype(name: str):
    import torch

    return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[parse_dtype(name)]


def resolve_model(model: str | None = None, model_file: str | Path | None = None) -> ModelSpec:
    """A ModelSpec from `--model` or `--model-file` (exactly one). BadInput names the known models."""
    if model and model_file:
        raise BadInput("both --model and --model-file were given", "pass one of them")
    if model_file:
        return _file_spec(str(model_file))
    if not model:
        raise BadInput("no model given", f"pass --model NAME ({known_names()}) or --model-file path.py:factory")
    wanted = _normal(model)
    entries = zoo_entries()
    if wanted in entries:
        entry = entries[wanted]
        return ModelSpec(kind="zoo", name=entry.name, zoo=entry)
    for entry in entries.values():
        if _normal(entry.class_name) == wanted:
            return ModelSpec(kind="zoo", name=entry.name, zoo=entry)
    from sdcompile.core.zoo.any_class import listed, model_name, transformer_classes

    if listed(model.strip()):
        return ModelSpec(kind="class", name=model_name(model.strip()), class_name=model.strip())
    if model.endswith(".py") or ":" in model:
        raise BadInput(f"{model!r} looks like a file, not a model name", "use --model-file path.py:factory")
    from sdcompile.util.choices import UnknownChoice

    raise UnknownChoice("model", model, entries, hint=" (or their diffusers class names, or any diffusers "
                        "transformer class), or pass your own with --model-file path.py:factory",
                        also=transformer_classes())


def _file_spec(text: str) -> ModelSpec:
    path_text, sep, factory = text.rpartition(":")
    if not sep or not path_text or not factory:
        raise BadInput(f"--model-file {text!r} is not path.py:factory", "e.g. --model-file my_model.py:build")
    if not factory.isidentifier():
        raise BadInput(f"{factory!r} is not a Python function name", "e.g. --model-file my_model.py:build")
    path = Path(path_text).expanduser().resolve()
    if not path.is_file():
        raise BadInput(f"model file {path} does not exist", "check the path (relative to the current folder)")
    return ModelSpec(kind="file", name=f"{path.stem}-{factory}", path=path, factory=factory)


# ------------------------------------------------------------------------------------------------ building
def build_model(spec: ModelSpec | str, dtype: str = "bf16", seed: int = 0,
                timeout: float | None = None) -> BuiltModel:
    """Build the model in eval mode with floating tensors in `dtype` and its example inputs likewise.

    Random weights are seeded, so two builds of the same spec are identical. Parameters that the model class
    lists in `_keep_in_fp32_modules` stay fp32, as `from_pretrained(torch_dtype=...)` leaves them. In zoo
    models, parameters their init leaves at one constant (norm gammas at 1, betas and zero-initialised
    projections at 0) are moved off it (seeded), as trained weights are, so a replacement that drops a gamma or
    takes another module's shows in model-level numerics.

    Building (importing a model file and calling its factory) may take `timeout` seconds (None: $SDCOMPILE_TIMEOUT,
    else deadline.DEFAULT_TIMEOUT; 0: no deadline); the model's forwards get the same through `forward_deadline()`.
    """
    import torch

    from sdcompile.core.zoo.deadline import deadline, timeout_seconds
    from sdcompile.core.zoo.inputs import cast_floating
    from sdcompile.core.zoo.model_file import build_from_file

    if isinstance(spec, str):
        spec = resolve_model(spec)
    dtype_name = parse_dtype(dtype)
    target = torch_dtype(dtype_name)
    seconds = timeout_seconds(timeout)
    started = time.perf_counter()
    torch.manual_seed(seed)
    _quiet_diffusers()  # imports diffusers: sdcompile's own time, before the deadline on the model's code starts
    with quiet_model_warnings(), deadline(seconds, _subject(spec), "build"):
        notes: tuple[str, ...] = ()
        if spec.kind == "zoo":
            module, inputs = _build_zoo(spec.zoo)
        elif spec.kind == "class":
            module, inputs, notes = _build_class(spec, seed)
        else:
            module, inputs = build_from_file(spec.path, spec.factory)
    module.eval()
    perturbed = _perturb_constant_parameters(module, seed) if spec.kind != "file" else ()
    kept = _cast_module(module, target)
    inputs = cast_floating(inputs, target)
    elapsed = time.perf_counter() - started
    cls = type(module)
    if spec.kind != "file":
        label = f"{spec.name} ({cls.__name__}, {notes[0] if notes else 'tiny config'})"
    else:
        label = f"{spec.path.name}:{spec.factory} ({cls.__name__})"
    log.info("built %s in %s: %d parameters in %.2f s", label, dtype_name,
             sum(p.numel() for p in module.parameters()), elapsed)
    return BuiltModel(
        name=spec.name,
        label=label,
        module=module,
        inputs=inputs,
        dtype=target,
        dtype_name=dtype_name,
        class_name=f"{cls.__module__}.{cls.__qualname__}",
        model_module=cls.__module__,
        spec=spec,
        timeout=seconds,
        kept_fp32=kept,
        perturbed=perturbed,
        build_seconds=elapsed,
        notes=notes[1:],
    )


@contextmanager
def quiet_model_warnings() -> Iterator[None]:
    """Silence the Python warnings diffusers emits while tiny models are built and run (deprecation notices,
    autocast on CPU): they say nothing about the user's model and would bury sdcompile's own messages."""
    with warnings.catch_warnings():
        for category in (FutureWarning, DeprecationWarning, UserWarning):
            warnings.filterwarnings("ignore", category=category, module=r"(diffusers|torch)\b.*")
        yield


def _quiet_diffusers() -> None:
    # diffusers warns about config keys and fp32 modules on stderr for every tiny build; nothing actionable.
    from diffusers.utils import logging as diffusers_logging

    diffusers_logging.set_verbosity_error()


def _build_zoo(entry: ZooEntry):
    import diffusers

    from sdcompile.core.zoo.inputs import InputSpecError, materialize_inputs

    cls = getattr(diffusers, entry.class_name, None)
    if cls is None:
        raise BadInput(
            f"diffusers {diffusers.__version__} has no class {entry.class_name} (zoo model {entry.name!r})",
            "install a diffusers version that has it (the zoo was verified on 0.42.1)",
        )
    try:
        module = cls(**entry.config)
        inputs = materialize_inputs(entry.entry, f"zoo.toml [model.{entry.name}]")
    except InputSpecError as exc:
        raise BadInput(f"zoo catalog error: {exc}", "fix sdcompile/catalogs/zoo.toml") from exc
    return module, inputs


def _build_class(spec: ModelSpec, seed: int):
    """(module, inputs, notes: the size first) of a diffusers class the zoo does not list (any_class.py)."""
    from sdcompile.core.zoo.any_class import build_class
    from sdcompile.core.zoo.synthesis import shown

    built = build_class(spec.class_name, seed)
    changed = f"; {', '.join(built.changed)}" if built.changed else ""
    return built.module, built.inputs, (f"{built.size} config", f"size {built.size}: the class's default config"
                                        f"{changed}", f"inputs synthesized: {shown(built.specs)}")


# How far a constant-initialised parameter moves: a constant c != 0 (norm gammas) becomes c * exp(N(0, 0.5)) —
# positive, mostly 0.6c to 1.6c, different per channel and per site, as trained gammas are; zeros become
# N(0, 0.5). Smaller spreads hide a dropped gamma on tiny models (measured: 0.2 left Flux's output within bf16
# tolerance with every q/k gamma dropped).
PERTURB_STD = 0.5


def _perturb_constant_parameters(module, seed: int) -> tuple[str, ...]:
    import torch

    gen = torch.Generator().manual_seed(seed + 1)
    moved = []
    with torch.no_grad():
        for name, parameter in module.named_parameters():
            if not parameter.is_floating_point() or parameter.numel() < 2:
                continue
            first = parameter.reshape(-1)[0]
            if not bool((parameter == first).all()):
                continue
            noise = torch.randn(parameter.shape, generator=gen, dtype=torch.float32) * PERTURB_STD
            if float(first) == 0.0:
                parameter.copy_(noise.to(parameter.dtype))
            else:
                parameter.mul_(noise.exp().to(parameter.dtype))
            moved.append(name)
    return tuple(moved)


def _cast_module(module, dtype) -> tuple[str, ...]:
    """Cast floating parameters and buffers to `dtype`, leaving `_keep_in_fp32_modules` ones as built."""
    keep = tuple(getattr(module, "_keep_in_fp32_modules", None) or ())
    kept = []
    for owner_name, owner in module.named_modules():
        for is_buffer, registry in ((False, owner._parameters), (True, owner._buffers)):
            for attr, tensor in list(registry.items()):
                if tensor is None or not tensor.is_floating_point():
                    continue
                full = f"{owner_name}.{attr}" if owner_name else attr
                if keep and any(part in keep for part in full.split(".")):
                    kept.append(full)
                    continue
                if tensor.dtype == dtype:
                    continue
                # As nn.Module.to(): parameters keep their identity, buffers are replaced (a buffer may be a
                # view, whose base would keep the old dtype if only .data were swapped)
                if is_buffer:
                    registry[attr] = tensor.to(dtype)
                else:
                    tensor.data = tensor.data.to(dtype)
    return tuple(kept)
