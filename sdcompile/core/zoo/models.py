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

from sdcompile.core.zoo.build_options import DEFAULT as DEFAULT_BUILD
from sdcompile.core.zoo.build_options import ModelBuild
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

    kind: str  # "zoo", "class" (a diffusers class the zoo does not list), "file" or "capture"
    name: str
    zoo: ZooEntry | None = None
    path: Path | None = None
    factory: str | None = None
    class_name: str | None = None  # kind "class": the diffusers class; "capture": the recorded class's name
    build: ModelBuild = DEFAULT_BUILD  # --size, --config, --num-layers, --inputs, --model-capture

    @property
    def origin(self) -> str:
        size = self.build.effective_size
        config = f"{self.build.config}" if self.build.config else "its default config"
        layers = f", --num-layers {self.build.num_layers}" if self.build.num_layers else ""
        inputs = f", inputs from {self.build.inputs}" if self.build.inputs else ""
        if self.kind == "capture":
            return f"capture {self.build.capture}: {self.class_name} (its recorded config{layers}, random weights, " \
                   f"the recorded inputs{inputs})"
        if self.zoo is not None and size == "tiny" and self.build.config is None:
            return f"zoo: {self.zoo.name} = {self.zoo.class_name} (tiny config{layers}, random weights{inputs})"
        if self.class_name is not None or self.zoo is not None:
            cls = self.class_name or self.zoo.class_name
            shape = "shrunk" if size == "tiny" else "at real size"
            return f"diffusers class {cls} ({config} {shape}{layers}, random weights, inputs synthesized{inputs})"
        return f"model file: {self.path}:{self.factory}{inputs}"

    @property
    def model_option(self) -> str | None:
        """What `--model` takes to name this model again (None for a model file or a capture)."""
        if self.kind == "capture":
            return None
        return self.zoo.name if self.zoo is not None else self.class_name

    @property
    def model_class_name(self) -> str | None:
        """The diffusers class built (None for a model file)."""
        return self.zoo.class_name if self.zoo is not None else self.class_name


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


def resolve_model(model: str | None = None, model_file: str | Path | None = None,
                  build: ModelBuild | None = None) -> ModelSpec:
    """A ModelSpec from `--model`, `--model-file` or `build.capture` (exactly one; `--config` alone names its class),
    built as `build` says. BadInput names the known models, or what cannot be combined."""
    from dataclasses import replace

    build = build or DEFAULT_BUILD
    given = [flag for flag, value in (("--model", model), ("--model-file", model_file),
                                      ("--model-capture", build.capture)) if value]
    if len(given) > 1:
        raise BadInput(f"both {given[0]} and {given[1]} were given", "pass one of them")
    if build.capture is not None:
        spec = _capture_spec(build)
    elif model_file:
        spec = _file_spec(str(model_file))
    else:
        spec = _named_spec(model or _config_class(build))
    build.check(spec.kind)
    _check_config_class(spec, build)
    return replace(spec, build=build)


def _config_class(build: ModelBuild) -> str:
    if build.config is None:
        raise BadInput("no model given", f"pass --model NAME ({known_names()}) or --model-file path.py:factory")
    from sdcompile.core.zoo.config_file import read_config

    class_name, _config = read_config(build.config)
    if class_name is None:
        raise BadInput(f"--config {build.config} records no _class_name", "name the class: --model CLASS --config ...")
    return class_name


def _check_config_class(spec: ModelSpec, build: ModelBuild) -> None:
    if build.config is None:
        return
    from sdcompile.core.zoo.config_file import read_config

    class_name, _config = read_config(build.config)
    if class_name is not None and class_name != spec.model_class_name:
        raise BadInput(f"--config {build.config} is a {class_name} config, and --model names "
                       f"{spec.model_class_name}", f"drop --model (the config names its class) or pass the "
                       f"{spec.model_class_name} config")


def _capture_spec(build: ModelBuild) -> ModelSpec:
    from sdcompile.core.zoo.any_class import model_name
    from sdcompile.core.zoo.capture_file import read_header

    header = read_header(build.capture)
    for entry in zoo_entries().values():
        if entry.class_name == header.qualname:
            return ModelSpec(kind="capture", name=entry.name, class_name=header.qualname)
    return ModelSpec(kind="capture", name=model_name(header.qualname), class_name=header.qualname)


def _named_spec(model: str) -> ModelSpec:
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
    from sdcompile.core.zoo.sized import build_sized
    from sdcompile.core.zoo.weights import cast_module, perturb_constant_parameters

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
        made_here = spec.kind == "file" or spec.kind == "capture" or _zoo_tiny(spec)  # else --inputs is in the build
        if spec.kind == "file":
            module, inputs = build_from_file(spec.path, spec.factory)
        elif _zoo_tiny(spec):
            module, inputs = _build_zoo(spec.zoo, spec.build.num_layers)
        else:
            module, inputs, notes = build_sized(spec, seed)
        if spec.build.inputs is not None and made_here:
            from sdcompile.core.zoo.sized import override_inputs

            inputs = override_inputs(module, inputs, spec.build.inputs)
    module.eval()
    perturbed = perturb_constant_parameters(module, seed) if spec.kind != "file" else ()
    kept = cast_module(module, target)
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


def _zoo_tiny(spec: ModelSpec) -> bool:
    """A zoo model at its own tiny config and inputs (not --size real, not --config)."""
    return spec.kind == "zoo" and spec.build.effective_size == "tiny" and spec.build.config is None


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
    # Set once: each setting clears every logger's level cache (half a millisecond, as much as a tiny build's
    # seeding).
    from diffusers.utils import logging as diffusers_logging

    if diffusers_logging.get_verbosity() < diffusers_logging.ERROR:
        diffusers_logging.set_verbosity_error()


def _build_zoo(entry: ZooEntry, num_layers: int | None = None):
    import diffusers

    from sdcompile.core.zoo.inputs import InputSpecError, materialize_inputs

    cls = getattr(diffusers, entry.class_name, None)
    if cls is None:
        raise BadInput(
            f"diffusers {diffusers.__version__} has no class {entry.class_name} (zoo model {entry.name!r})",
            "install a diffusers version that has it (the zoo was verified on 0.42.1)",
        )
    config = dict(entry.config)
    if num_layers is not None:
        config = _with_layers(cls, config, num_layers)
    try:
        module = cls(**config)
        inputs = materialize_inputs(entry.entry, f"zoo.toml [model.{entry.name}]")
    except InputSpecError as exc:
        raise BadInput(f"zoo catalog error: {exc}", "fix sdcompile/catalogs/zoo.toml") from exc
    return module, inputs


def _with_layers(cls, config: dict[str, Any], num_layers: int) -> dict[str, Any]:
    """A zoo config with every block count at `num_layers` (at most the class's default): the zoo's own counts are
    its shrunk ones, so they are counted from the defaults."""
    from sdcompile.core.zoo.any_class import block_counts, constructor_defaults, layer_rules, shrink

    try:
        counts = block_counts(constructor_defaults(cls))
    except BadInput:
        counts = {}
    return shrink({**config, **counts}, layer_rules(), num_layers)[0]
