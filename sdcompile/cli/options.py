"""Options shared by several commands, declared once so their names, env vars and help never drift."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NamedTuple

import typer

from sdcompile.core.ops import OPS
from sdcompile.core.zoo.build_options import SIZES
from sdcompile.core.zoo.models import DTYPES
from sdcompile.phases.choices import ATTENTION, DEBUG_STAGES, INFLATION_METRICS, PROFILE_MODES, SCAFFOLD_PATHS

# --- closed choices: StrEnums built from their canonical tuples, checked by one parser -----------------------------
# Each parser raises UnknownChoice (exit 2, "did you mean ..." with the corrected command line), not click's own
# choice error; the enum still gives the help its <a|b|c> and the shell completion its values.
Op = StrEnum("Op", {name: name for name in OPS})
OpOrAll = StrEnum("OpOrAll", {name: name for name in (*OPS, "all")})
Dtype = StrEnum("Dtype", {name: name for name in DTYPES})
ScaffoldPath = StrEnum("ScaffoldPath", {name: name for name in SCAFFOLD_PATHS})
DebugStage = StrEnum("DebugStage", {name: name for name in DEBUG_STAGES})
ProfileMode = StrEnum("ProfileMode", {name: name for name in PROFILE_MODES})
InflationMetric = StrEnum("InflationMetric", {name: name for name in INFLATION_METRICS})
Attention = StrEnum("Attention", {name: name for name in ATTENTION})
Size = StrEnum("Size", {name: name for name in SIZES})


def choice(enum: type[StrEnum], what: str):
    """A typer `parser` for `enum`: its member for a known value (any case), else UnknownChoice naming the closest."""

    def parse(value):
        from sdcompile.util.choices import check_choice

        return value if isinstance(value, enum) else enum(check_choice(value, [m.value for m in enum], what))

    return parse


def _dtype(value):
    # the dtype's spellings (bfloat16, float32, ...) as well as the enum's names
    from sdcompile.core.zoo.models import parse_dtype

    return value if isinstance(value, Dtype) else Dtype(parse_dtype(value))


def _dtypes(value: str) -> str:
    # scaffold's --dtype: a comma-separated list, each checked as --dtype is
    from sdcompile.core.zoo.models import parse_dtype

    return ",".join(parse_dtype(part) for part in str(value).split(",") if part.strip()) or str(value)


def op_option(help_text: str, *, all_: bool = False):
    return typer.Option("--op", parser=choice(OpOrAll if all_ else Op, "op"), help=help_text)


PathOpt = Annotated[ScaffoldPath, typer.Option(
    "--path", parser=choice(ScaffoldPath, "--path"),
    help="How scaffold generates: auto (per site on this torch: a register_replacement pattern where one holds the "
    "chain, else a GraphPatternEntry), replacement, graph-entry, or graph-pass (a custom FX pass after freeze(): "
    "forbidden upstream, written only when asked, switched on by the backend edit scaffold shows).")]
NameOpt = Annotated[str | None, typer.Option(
    "--name", help="The <model> word of the generated names (enable_<model>_<op>). Default: the zoo model name; "
    "required with --model-file.")]


DtypeOpt = Annotated[Dtype, typer.Option("--dtype", parser=_dtype, help="Model and input dtype: bf16, fp16 or fp32.")]
DtypeList = Annotated[str, typer.Option(
    "--dtype", parser=_dtypes, metavar="<bf16|fp16|fp32>[,...]",
    help="Model and input dtype: bf16, fp16 or fp32; several comma-separated (bf16,fp32) give one group entry per "
    "dtype, from each dtype's own graph.")]
OptionalOp = Annotated[Op | None, op_option("The op of the model/op pair (rmsnorm, rope, adaln, gelu).")]
Stage = Annotated[DebugStage, typer.Option(
    "--stage", parser=choice(DebugStage, "--stage"),
    help="before-freezing: the graph MindieSDBackend's pattern pass matches (graph_rewrite_before_freezing). "
    "after-freezing: the graph after freeze() (counts there say what the patterns would replace if they ran at "
    "that stage: mismatch type 6's frozen constants).")]
Mode = Annotated[ProfileMode, typer.Option("--mode", parser=choice(ProfileMode, "--mode"),
                                           help="eager, or compile (through --backend).")]
Metric = Annotated[InflationMetric, typer.Option(
    "--inflation-metric", parser=choice(InflationMetric, "--inflation-metric"),
    help="What the gate and the advice compare: time, count, or auto: time for NPU profiles, count when a side is "
    "a CPU capture (its durations are CPU times that swing with the machine's load).")]
Attn = Annotated[Attention | None, typer.Option(
    "--attn", parser=choice(Attention, "--attn"),
    help="Attention dimensionality of the model: 2d (image) or 3d (video), shown beside the advice.")]


def _backend(value: str) -> str:
    # the catalog (catalogs/backends.toml) is data: read when the option is parsed, not when the CLI starts
    from sdcompile.phases.profile.phase import backend_names
    from sdcompile.util.choices import check_choice

    return check_choice(value, backend_names(), "backend")


Backend = Annotated[str, typer.Option(
    "--backend", parser=_backend,
    help="What compiles the model: default (MindieSDBackend) or aclgraph (MindIE-SD's ACLGraph), or torchair's "
    "torchair_ge or npugraph_ex (outside MindIE-SD: its fusions are lost), to measure them. Without the real NPU "
    "stack only default runs (under the emulated NPU); the others exit 3.")]


def _json(value: bool) -> bool:
    # While parsing, so everything the command then runs is covered (and an earlier command's mode, in one process,
    # is not carried over).
    from sdcompile.rendering.output import reserve_stdout_for_json

    reserve_stdout_for_json(value)
    return value


Json = typer.Option(False, "--json", help="Print one JSON document to stdout: indented on a terminal, one line "
                    "otherwise (messages go to stderr).",
                    callback=_json)
Repo = typer.Option(
    None,
    "--repo",
    envvar="SDCOMPILE_REPO",
    help="MindIE-SD source tree (the folder holding mindiesd/). Default: $SDCOMPILE_REPO, else search upward "
    "from the current folder.",
    show_envvar=False,
)
CaptureRepo = typer.Option(
    None,
    "--repo",
    envvar="SDCOMPILE_REPO",
    help="MindIE-SD source tree whose redundant-node pass and decomposition table the capture runs, as its "
    "backend does. Default: $SDCOMPILE_REPO, else none: sdcompile's equivalent pass (same rules).",
    show_envvar=False,
)
def _workdir(value: Path | None) -> Path | None:
    # Every command that reads the workspace (status too) looks paths up under it: one the system cannot look up
    # stops here. Commands that write it check it is writable before their work (input_checks.writable_dir).
    from sdcompile.util.input_checks import check_path_length

    return None if value is None else check_path_length(value, "--workdir")


def writable_workdir(workdir: Path | None) -> None:
    """Exit 2 unless the workspace (--workdir, else $SDCOMPILE_WORKDIR, else ./.sdcompile) can be written: called by
    each command that records there, before its work."""
    from sdcompile.util.input_checks import writable_dir
    from sdcompile.workspace.store import resolve_workdir

    writable_dir(workdir or resolve_workdir(), "--workdir")


Workdir = typer.Option(
    None,
    "--workdir",
    envvar="SDCOMPILE_WORKDIR",
    help="Workspace folder for artifacts and lifecycle state. Default: $SDCOMPILE_WORKDIR, else ./.sdcompile",
    show_envvar=False,
    callback=_workdir,
)
DryRun = typer.Option(False, "--dry-run", help="Show every change as a unified diff and write nothing.")
Force = typer.Option(False, "--force", help="Overwrite files that already exist.")


# --- the model a command runs on (analyze, scaffold, verify, debug, integrate, profile, run) ---------------------
# Resolve with `sdcompile.core.zoo.models.resolve_model(model, model_file)`, build with
# `build_model(spec, dtype, timeout=timeout)` and run its forwards under `built.forward_deadline()`.
Model = typer.Option(
    None,
    "--model",
    "-m",
    help="A zoo model (flux, sd3, wan, hunyuanvideo, qwenimage, cogvideox, ltx, pixart, sana, flux2, chroma, "
    "skyreels_v2, minimax_h3, ...) or its diffusers class name (FluxTransformer2DModel); or any other diffusers "
    "transformer class (CogView4Transformer2DModel): its default config shrunk to one block, inputs synthesized "
    "from its forward. Random weights, nothing downloaded.",
)


def _model_file(value: str | None) -> str | None:
    # Checked while parsing, so a path generated code or a command line could not hold stops before any work.
    from sdcompile.util.input_checks import check_path_text

    return None if value is None else check_path_text(value, "--model-file")


ModelFile = typer.Option(
    None,
    "--model-file",
    help="Your own model instead: path.py:factory, where factory() returns (module, example_forward_kwargs).",
    callback=_model_file,
)

# How the model is built beyond its name (every command that takes --model): gather them with `model_build(...)`.
SizeOpt = Annotated[Size | None, typer.Option(
    "--size", parser=choice(Size, "--size"), help="tiny: a few blocks of two heads (the default for --model); real: "
    "the class's own widths from its default config (or --config), with --num-layers blocks.")]
ConfigOpt = Annotated[Path | None, typer.Option(
    "--config", help="A diffusers config.json, or a model folder holding transformer/config.json or config.json, to "
    "build at real size (no weights are read). Names the class when --model is not given.")]
NumLayersOpt = Annotated[int | None, typer.Option(
    "--num-layers", min=1, help="Every block count of the config at most N (one double and one single block with "
    "1), as MindIE-SD's dummy runs build a model from its real config.")]
InputsOpt = Annotated[Path | None, typer.Option(
    "--inputs", help="A TOML file whose [inputs] table gives forward arguments in the zoo's input language "
    "(name = { randn = [1, 4096, 64], seed = 0 }); they replace the ones sdcompile makes.")]
ModelCaptureOpt = Annotated[Path | None, typer.Option(
    "--model-capture", help="A file `sdcompile capture` wrote from your pipeline: the model's class, real config and "
    "recorded forward inputs, replayed with random weights (add --num-layers 1 to keep it small).")]


def model_build(size: Size | None = None, config: Path | None = None, num_layers: int | None = None,
                inputs: Path | None = None, capture: Path | None = None):
    """The ModelBuild the model-build options give (ModelBuild() when none is given)."""
    from sdcompile.core.zoo.build_options import ModelBuild

    return ModelBuild(size=size.value if size is not None else None, config=config, num_layers=num_layers,
                      inputs=inputs, capture=capture)


class ModelChoice(NamedTuple):
    """What the model options chose: `model, model_file, build = chosen`."""

    model: str | None
    model_file: str | None
    build: Any  # sdcompile.core.zoo.build_options.ModelBuild


# The default of a command's `chosen` parameter: `model_options` puts the model options in its place.
MODEL_OPTIONS = ModelChoice(None, None, None)

_MODEL_OPTIONS = (
    ("model", str | None, Model),
    ("model_file", str | None, ModelFile),
    ("size", SizeOpt, None),
    ("config", ConfigOpt, None),
    ("num_layers", NumLayersOpt, None),
    ("inputs", InputsOpt, None),
    ("model_capture", ModelCaptureOpt, None),
)


def model_options(command: Callable) -> Callable:
    """`command` with the model options (--model, --model-file and the build options) where its parameter
    `chosen: ModelChoice = MODEL_OPTIONS` stands: declared here once for every command that runs a model. typer
    reads the wrapper's signature; the command gets the options gathered as `chosen`."""
    signature = inspect.signature(command, eval_str=True)
    parameters = list(signature.parameters.values())
    at = next(i for i, p in enumerate(parameters) if p.default is MODEL_OPTIONS)
    chosen_name = parameters[at].name
    parameters[at:at + 1] = [inspect.Parameter(option, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default,
                                               annotation=kind) for option, kind, default in _MODEL_OPTIONS]

    @functools.wraps(command)
    def with_model_options(**kwargs):
        model, model_file, *build = (kwargs.pop(option) for option, _, _ in _MODEL_OPTIONS)
        return command(**kwargs, **{chosen_name: ModelChoice(model, model_file, model_build(*build))})

    with_model_options.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    with_model_options.__annotations__ = {p.name: p.annotation for p in parameters}
    return with_model_options


Timeout = typer.Option(
    None,
    "--timeout",
    min=0,
    help="Seconds the model's build, and each forward of it, may take before the command ends with exit 2 naming "
    "what hung (0: no limit; a native op that never returns to Python cannot be interrupted). Default: "
    "$SDCOMPILE_TIMEOUT, else 600.",
)
PlainCpu = typer.Option(
    False,
    "--plain-cpu",
    help="Trace as a plain CPU process (diffusers without torch_npu) instead of the NPU (real, else emulated).",
)

# --- which profiling sessions and ranks a profile folder contributes (integrate, copy-audit) ----------------------
Session = typer.Option(
    None,
    "--session",
    help="When one rank has several profiling sessions (*_ascend_pt folders) in a profile folder: 'latest', or "
    "the session folder's timestamp (a prefix is enough; repeat for the other side).",
)
Rank = typer.Option(None, "--rank", help="Read only this rank (the rank id of profiler_info_<rank>.json).", min=0)
KernelCatalog = typer.Option(None, "--catalog", help="Extra kernel catalog (TOML, kernels.toml schema).")
Html = typer.Option(None, "--html", help="Also write a self-contained HTML report here.")
