"""One cell: `sdcompile run` (or `scaffold --dry-run`, --until scaffold) for one model and op, in a process of its
own, with a workspace (and so a copy of the target) of its own, so cells never share state and a crash or hang ends
one cell, not the table. What the command returned is read into the cell by cell_reading.py."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from sdcompile.core.target.package_cache import DEFAULT_VERSION, copy_tree, ensure_unpacked
from sdcompile.lifecycle.matrix.cell_reading import make_cell, read_cell, scaffold_cell
from sdcompile.lifecycle.matrix.results import Cell, Outcome
from sdcompile.lifecycle.results import RunResult
from sdcompile.phases.scaffold.results import ScaffoldResult
from sdcompile.util.errors import EXIT_BAD_INPUT, BadInput
from sdcompile.util.held_lock import held_lock
from sdcompile.util.serialize import from_jsonable

RUN, SCAFFOLD = "run", "scaffold"  # how far a cell goes (--until)
MARKER = ".sdcompile-matrix-cell"  # in every cell folder the matrix made: only those are ever removed
_RUNNING: set[subprocess.Popen] = set()
_RUNNING_LOCK = threading.Lock()
_STOPPED = False  # set once the matrix is interrupted: no cell starts after that


def cell_folder(root: Path, model: str, op: str) -> Path:
    return root / "cells" / f"{re.sub(r'[^A-Za-z0-9._-]+', '-', model).strip('-')}-{op}"


def check_cell_folder(folder: Path) -> None:
    """A cell folder that exists must be one the matrix made (it is replaced): never a folder of the user's."""
    if folder.is_symlink() or (folder.exists() and not (folder / MARKER).is_file()):
        raise BadInput(f"{folder} exists and is not a cell folder sdcompile matrix made; nothing was changed",
                       "pass another --out, or move that folder away")


def stop_running_cells() -> None:
    """End every cell run under way (their process groups), and start no more: the matrix was interrupted."""
    global _STOPPED
    with _RUNNING_LOCK:
        _STOPPED = True
        running = list(_RUNNING)
    for proc in running:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


def run_cell(root: Path, model: str, op: str, timeout: float | None, torch_version: str,
             repo: Path | None = None, until: str = RUN) -> Cell:
    """`sdcompile run` (or, until SCAFFOLD, `scaffold --dry-run`) for (model, op) in its own folder under `root`;
    `timeout`: seconds for the whole command; `repo`: a tree copied into the cell's folder for the command (default:
    run's own scratch copy of the release; scaffold gets a copy of it). Two matrix runs never run one cell at once
    (its lock); the second finds it busy and says so as the cell's outcome."""
    folder = cell_folder(root, model, op)
    folder.parent.mkdir(parents=True, exist_ok=True)

    def busy(who: str) -> BadInput:
        return BadInput(f"the cell is being run by {who}", "wait for it, or pass another --out")

    try:
        with held_lock(folder.parent / f".{folder.name}.lock", folder.parent / f".{folder.name}.holder", busy):
            return _run_cell(folder, root, model, op, timeout, torch_version, repo, until)
    except BadInput as busy_cell:
        return make_cell(model, op, torch_version, Outcome.REFUSED, why=busy_cell.one_line(), exit_code=EXIT_BAD_INPUT)


def _run_cell(folder: Path, root: Path, model: str, op: str, timeout: float | None, torch_version: str,
              repo: Path | None, until: str) -> Cell:
    check_cell_folder(folder)
    if folder.exists():
        shutil.rmtree(folder)  # the matrix's own folder from an earlier run of this cell
    folder.mkdir(parents=True)
    (folder / MARKER).write_text(f"{model} x {op}: a cell of sdcompile matrix\n", encoding="utf-8")
    command = _command(folder, model, op, repo, until)
    env = {k: v for k, v in os.environ.items() if k not in ("SDCOMPILE_REPO", "SDCOMPILE_WORKDIR", "COLUMNS")}
    started = time.monotonic()
    with _RUNNING_LOCK:  # started and registered at once: an interrupt either sees it or stops it starting
        if _STOPPED:
            return make_cell(model, op, torch_version, Outcome.CRASHED, why="the matrix was interrupted", exit_code=-1)
        proc = subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)  # its own group: a timeout ends its children too
        _RUNNING.add(proc)
    try:
        out, err = proc.communicate(timeout=timeout or None)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return make_cell(model, op, torch_version, Outcome.TIMED_OUT, why=f"no result after {timeout:g} s",
                     seconds=time.monotonic() - started, exit_code=-1)
    finally:
        with _RUNNING_LOCK:
            _RUNNING.discard(proc)
    (folder / f"{until}.stderr.txt").write_text(err, encoding="utf-8")
    seconds = time.monotonic() - started
    try:
        document = json.loads(out)
        if until == SCAFFOLD:
            return scaffold_cell(from_jsonable(ScaffoldResult, document), op, model, torch_version, seconds,
                                 proc.returncode)
        return read_cell(from_jsonable(RunResult, document), root, op, model, torch_version, seconds,
                         proc.returncode)
    except (ValueError, TypeError, KeyError):
        last = next((line for line in reversed(err.splitlines()) if line.strip()), "no output")
        outcome = Outcome.REFUSED if proc.returncode == EXIT_BAD_INPUT else Outcome.CRASHED
        return make_cell(model, op, torch_version, outcome, why=f"exit {proc.returncode}: {last.strip()}",
                     seconds=seconds, exit_code=proc.returncode)


def _command(folder: Path, model: str, op: str, repo: Path | None, until: str) -> list[str]:
    source = ("--model-file", model) if ":" in model and model.split(":", 1)[0].endswith(".py") else ("--model", model)
    name = ("--name", Path(model.split(":", 1)[0]).stem) if source[0] == "--model-file" else ()
    workdir = ("--workdir", str(folder / ".sdcompile"))
    if until == SCAFFOLD:  # a dry run on a copy of the tree, as `run` would scaffold (--path auto)
        tree = copy_tree(repo or ensure_unpacked(DEFAULT_VERSION), folder / "target")
        return [sys.executable, "-m", "sdcompile", "scaffold", *source, *name, "--op", op, "--dry-run", "--json",
                "--repo", str(tree), *workdir]
    command = [sys.executable, "-m", "sdcompile", "run", *source, *name, "--op", op, "--json", "--restart", *workdir]
    return command + (["--repo", str(copy_tree(repo, folder / "target"))] if repo is not None else [])
