"""One cell: `sdcompile run` for one model and op, in a process of its own, with a workspace (and so a scratch copy
of the target) of its own, so cells never share state and a crash or hang ends one cell, not the table. The cell's
outcome is read from what the run returned and recorded: its result, scaffold's decision, verify's kernel checks and
integrate's compile."""

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

from sdcompile.core.npu.kernel_check import KernelVerdict
from sdcompile.core.target.package_cache import copy_tree
from sdcompile.lifecycle.matrix.results import Cell, Outcome
from sdcompile.lifecycle.results import RunResult
from sdcompile.phases.scaffold.facts import ScaffoldFacts, pair_facts
from sdcompile.util.errors import EXIT_BAD_INPUT, BadInput
from sdcompile.util.held_lock import held_lock
from sdcompile.util.serialize import from_jsonable
from sdcompile.workspace.artifacts import ArtifactError, read_artifact
from sdcompile.workspace.store import Workspace

# scaffold's decision -> the outcome of a run that passed every gate
_PASSED = {"reuse": Outcome.REUSED, "generate": Outcome.GENERATED, "already fused": Outcome.ALREADY_FUSED}
# a generated file's kind (scaffold's PlannedFile.kind) -> the carrier it holds
_CARRIERS = (("graph entries", "graph entry"), ("pattern", "pattern group"))
_FAILED_KERNEL = (KernelVerdict.RAISES, KernelVerdict.DIFFERS)


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
             repo: Path | None = None) -> Cell:
    """`sdcompile run` for (model, op) in its own folder under `root`; `timeout`: seconds for the whole run; `repo`:
    a tree copied into the cell's folder for the run to edit (default: run's own scratch copy of the release). Two
    matrix runs never run one cell at once (its lock); the second finds it busy and says so as the cell's outcome."""
    folder = cell_folder(root, model, op)
    folder.parent.mkdir(parents=True, exist_ok=True)

    def busy(who: str) -> BadInput:
        return BadInput(f"the cell is being run by {who}", "wait for it, or pass another --out")

    try:
        with held_lock(folder.parent / f".{folder.name}.lock", folder.parent / f".{folder.name}.holder", busy):
            return _run_cell(folder, root, model, op, timeout, torch_version, repo)
    except BadInput as busy_cell:
        return _cell(model, op, torch_version, Outcome.REFUSED, why=busy_cell.one_line(), exit_code=EXIT_BAD_INPUT)


def _run_cell(folder: Path, root: Path, model: str, op: str, timeout: float | None, torch_version: str,
              repo: Path | None) -> Cell:
    check_cell_folder(folder)
    if folder.exists():
        shutil.rmtree(folder)  # the matrix's own folder from an earlier run of this cell
    folder.mkdir(parents=True)
    (folder / MARKER).write_text(f"{model} x {op}: a cell of sdcompile matrix\n", encoding="utf-8")
    source = ("--model-file", model) if ":" in model and model.split(":", 1)[0].endswith(".py") else ("--model", model)
    command = [sys.executable, "-m", "sdcompile", "run", *source, "--op", op, "--json", "--restart",
               "--workdir", str(folder / ".sdcompile")]
    if source[0] == "--model-file":
        command += ["--name", Path(model.split(":", 1)[0]).stem]
    if repo is not None:
        command += ["--repo", str(copy_tree(repo, folder / "target"))]
    env = {k: v for k, v in os.environ.items() if k not in ("SDCOMPILE_REPO", "SDCOMPILE_WORKDIR", "COLUMNS")}
    started = time.monotonic()
    with _RUNNING_LOCK:  # started and registered at once: an interrupt either sees it or stops it starting
        if _STOPPED:
            return _cell(model, op, torch_version, Outcome.CRASHED, why="the matrix was interrupted", exit_code=-1)
        proc = subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)  # its own group: a timeout ends its children too
        _RUNNING.add(proc)
    try:
        out, err = proc.communicate(timeout=timeout or None)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return _cell(model, op, torch_version, Outcome.TIMED_OUT, why=f"no result after {timeout:g} s",
                     seconds=time.monotonic() - started, exit_code=-1)
    finally:
        with _RUNNING_LOCK:
            _RUNNING.discard(proc)
    (folder / "run.stderr.txt").write_text(err, encoding="utf-8")
    seconds = time.monotonic() - started
    try:
        result = from_jsonable(RunResult, json.loads(out))
    except (ValueError, TypeError, KeyError):
        last = next((line for line in reversed(err.splitlines()) if line.strip()), "no output")
        outcome = Outcome.REFUSED if proc.returncode == EXIT_BAD_INPUT else Outcome.CRASHED
        return _cell(model, op, torch_version, outcome, why=f"exit {proc.returncode}: {last.strip()}",
                     seconds=seconds, exit_code=proc.returncode)
    return read_cell(result, root, op, model, torch_version, seconds, proc.returncode)


def read_cell(result: RunResult, root: Path, op: str, model: str, torch_version: str, seconds: float,
              exit_code: int) -> Cell:
    """The cell of a run's `result`, from it and the records its phases name as evidence."""
    ws = Path(result.workspace)
    evidence = {Path(e).name: ws / e for p in result.phases for e in p.evidence}
    facts = pair_facts(Workspace(ws), Path(result.pair_folder).parent.name, op)
    decision = facts.decision if facts else ""
    integrate = _record(evidence.get("integrate.json"), "integrate") or {}
    compiled = integrate.get("model_compile") or {}
    check = integrate.get("op_check") or {}
    steps = len((integrate.get("compiled") or {}).get("steps") or ()) or 1
    figures = dict(fused_nodes=compiled.get("op_final_nodes"), cosine=compiled.get("cosine"),
                   fused_launches=check["fused_compile"] / steps if "fused_compile" in check else None)
    report = os.path.relpath(result.report, root) if result.report else ""
    common = dict(seconds=seconds, exit_code=exit_code, report=report, **figures)
    if result.passed:
        outcome = _PASSED.get(decision, Outcome.REUSED)
        return _cell(model, op, torch_version, outcome, carrier=_carrier(facts, outcome), **common)
    phase, why = result.stopped_at or "", result.stop_reason or ""
    if decision == "nothing located":
        outcome = Outcome.NO_SITE
    elif _kernel_fails(evidence.get("verify.json")):
        outcome = Outcome.NPU_KERNEL
    else:
        outcome = Outcome.DEAD_END if result.dead_end else Outcome.FAILS
    return _cell(model, op, torch_version, outcome, phase=phase, why=why, **common)


def _carrier(facts: ScaffoldFacts | None, outcome: Outcome) -> str:
    if facts is None:
        return ""
    if outcome is Outcome.REUSED:
        return ", ".join(facts.covering)
    if outcome is not Outcome.GENERATED:
        return ""
    if facts.graph_pass_class:
        return "graph pass"
    return next((name for kind, name in _CARRIERS if any(kind in k for k in facts.kinds)), "")


def _kernel_fails(verify: Path | None) -> bool:
    """verify judged a fused call of the op's own group on the NPU's kernel, and it raised or differed."""
    record = _record(verify, "verify") or {}
    return any((k.get("check") or {}).get("verdict") in _FAILED_KERNEL and k.get("pattern")
               for k in record.get("kernels", ()))


def _record(path: Path | None, kind: str) -> dict | None:
    if path is None:
        return None
    try:
        return read_artifact(kind, path)
    except (FileNotFoundError, ArtifactError):
        return None


def _cell(model: str, op: str, torch_version: str, outcome: Outcome, *, carrier: str = "", phase: str = "",
          why: str = "", fused_nodes: int | None = None, fused_launches: float | None = None,
          cosine: float | None = None, seconds: float = 0.0, report: str = "", exit_code: int = 0) -> Cell:
    return Cell(model, op, torch_version, outcome, carrier, phase, why, fused_nodes, fused_launches, cosine,
                round(seconds, 1), report, exit_code)
