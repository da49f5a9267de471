"""`sdcompile capture --out FILE -- COMMAND ...`: run COMMAND (a script calling the real pipeline) with the recorder
loaded into every Python interpreter it starts, and keep the file it writes: the transformer's class, config and the
inputs of its first forward(s), for `--model-capture FILE` to replay anywhere (sdcompile.core.zoo.recorder).

The recorder goes in through PYTHONPATH: a folder holding a sitecustomize.py that starts it (and then loads any
sitecustomize it shadows) and a link to this sdcompile, so the program's own interpreter needs only torch. The file
is written beside --out and renamed into place once complete; a program that runs no transformer forward leaves
--out as it was.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from sdcompile.core.zoo import recorder
from sdcompile.core.zoo.build_options import ModelBuild
from sdcompile.core.zoo.capture_file import read_header
from sdcompile.core.zoo.models import resolve_model
from sdcompile.phases.capture.results import CapturedArgument, CaptureResult
from sdcompile.util.command_line import SdcompileCommand
from sdcompile.util.errors import BadInput
from sdcompile.util.input_checks import check_output_file, check_path_text


def capture_program(out: Path | str, program: tuple[str, ...], *, calls: int = 1, keep_running: bool = False,
                    force: bool = False) -> CaptureResult:

    out = Path(check_path_text(str(out), "--out"))
    check_output_file(out, force, "--out")  # before the program runs: it ends in writing there
    if not program:
        raise BadInput("no program to run", "put it after --: sdcompile capture --out flux.sdcap -- python infer.py")
    if shutil.which(program[0]) is None:
        raise BadInput(f"{program[0]!r} is not a program on PATH", "name the interpreter: -- python infer.py ...")
    if calls < 1:
        raise BadInput(f"--calls {calls} records nothing", "pass --calls 1 or more")
    staged = out.parent / f".{out.name}.capturing"
    staged.unlink(missing_ok=True)
    try:
        with tempfile.TemporaryDirectory(prefix="sdcompile-capture-") as shim:
            # the program's output is a message, not sdcompile's result: stdout stays the result's (and --json's)
            status = subprocess.run(list(program), env=_environment(Path(shim), staged, calls, keep_running),
                                    stdout=sys.stderr.fileno(), check=False).returncode
        if not staged.is_file():
            raise BadInput(f"`{' '.join(program)}` ran no diffusers transformer forward (exit status {status}), so "
                           "nothing was recorded", "call the pipeline in that program before torch.compile wraps the "
                           "transformer, or record a module of your own: with sdcompile.capture(PATH, module=m)")
        os.replace(staged, out)
    finally:
        staged.unlink(missing_ok=True)
    return _result(out, program, status, calls, keep_running)


def _environment(shim: Path, staged: Path, calls: int, keep_running: bool) -> dict[str, str]:
    import sdcompile

    (shim / "sdcompile").symlink_to(Path(sdcompile.__file__).parent, target_is_directory=True)
    bootstrap = Path(recorder.__file__).parent / "capture_bootstrap"
    paths = [str(bootstrap), str(shim), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths), recorder.OUT_ENV: str(staged.resolve()),
            recorder.CALLS_ENV: str(calls), recorder.STOP_ENV: "0" if keep_running else "1"}


def _result(out: Path, program: tuple[str, ...], status: int, calls: int, keep_running: bool) -> CaptureResult:
    header = read_header(out)
    spec = resolve_model(build=ModelBuild(capture=out))
    return CaptureResult(
        out=str(out), model_class=f"{header.module}.{header.qualname}", model=spec.name,
        config_fields=len(header.config), calls=len(header.calls),
        arguments=tuple(CapturedArgument(k, v) for k, v in header.calls[0].items()),
        left_out=tuple(f"{k} ({v})" for k, v in header.left_out.items()), device=header.device,
        versions=header.versions, program=program, exit_status=status,
        stopped=status == 0 and not keep_running and len(header.calls) == calls, calls_wanted=calls,
        next_command=str(SdcompileCommand("analyze", build=(("--model-capture", out.resolve()), ("--num-layers", 1))))
    )
