"""Options shared by several commands, declared once so their names, env vars and help never drift."""

from __future__ import annotations

from pathlib import Path

import typer


def _json(value: bool) -> bool:
    # While parsing, so everything the command then runs is covered (and an earlier command's mode, in one process,
    # is not carried over).
    from sdcompile.rendering.output import reserve_stdout_for_json

    reserve_stdout_for_json(value)
    return value


Json = typer.Option(False, "--json", help="Print one JSON document to stdout (messages go to stderr).",
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


def repo_path(value: Path | None) -> Path | None:
    return Path(value) if value else None


# --- the model a command runs on (analyze, scaffold, verify, debug, integrate, profile, run) ---------------------
# Resolve with `sdcompile.core.zoo.models.resolve_model(model, model_file)`, build with
# `build_model(spec, dtype, timeout=timeout)` and run its forwards under `built.forward_deadline()`.
Model = typer.Option(
    None,
    "--model",
    "-m",
    help="A zoo model (flux, sd3, wan, hunyuanvideo, qwenimage, cogvideox, ltx, pixart, sana, flux2, chroma, "
    "skyreels_v2, minimax_h3, ...) or its diffusers class name (FluxTransformer2DModel). Tiny config, random "
    "weights, nothing downloaded.",
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
Timeout = typer.Option(
    None,
    "--timeout",
    min=0,
    help="Seconds the model's build, and each forward of it, may take before the command ends with exit 2 naming "
    "what hung (0: no limit; a native op that never returns to Python cannot be interrupted). Default: "
    "$SDCOMPILE_TIMEOUT, else 600.",
)
Dtype = typer.Option("bf16", "--dtype", help="Model and input dtype: bf16, fp16 or fp32.")
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
