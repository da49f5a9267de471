"""One command at a time per workspace pair: a file lock with a holder record that names the command holding it.

    <workdir>/<model>/<op>/pair.lock          flock (filelock) held by the command working in the pair's folder
    <workdir>/<model>/<op>/pair-holder.json   that command's pid and command line, to name it to a waiting one

`sdcompile run` holds it for the whole run, and `sdcompile profile --out` when the folder is inside a pair's folder
(run's own profiles are there), so two of them never write the same profiles or scratch copy. A second command
waits up to $SDCOMPILE_LOCK_TIMEOUT seconds (default 10, the variable the target tree's lock reads), then exits 2
naming the holder.

Decision: the lock lives in the pair folder itself, beside state.json and its lock, not in `run/`: the pair folder
is what every writer of the pair shares (run's scratch copy, profiles and report, the phases' own records), `run/`
is not there before the first run, and `run --restart` may rebuild what is under `run/` but never the lock.
`held_lock` is the mechanism; `pair_lock` is the pair's use of it.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from sdcompile.util.errors import BadInput
from sdcompile.workspace.store import STATE_FILE

TIMEOUT_ENV = "SDCOMPILE_LOCK_TIMEOUT"
DEFAULT_TIMEOUT = 10.0
PAIR_LOCK = "pair.lock"
PAIR_HOLDER = "pair-holder.json"


def command_line() -> str:
    return shlex.join(["sdcompile", *sys.argv[1:]])


def lock_timeout() -> float:
    raw = os.environ.get(TIMEOUT_ENV, "")
    try:
        return float(raw) if raw else DEFAULT_TIMEOUT
    except ValueError as exc:
        raise BadInput(f"${TIMEOUT_ENV}={raw!r} is not a number of seconds", f"unset it or set e.g. {TIMEOUT_ENV}=30") \
            from exc


def describe_holder(holder: Path) -> str:
    """`pid N (`command`)` from a holder record, or a phrase saying the holder has not written it yet."""
    try:
        data = json.loads(holder.read_text(encoding="utf-8"))
        return f"pid {int(data['pid'])} (`{data['command']}`)"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process (it has not said which yet)"


@contextmanager
def held_lock(lock_file: Path, holder: Path, busy: Callable[[str], BadInput]) -> Iterator[None]:
    """Hold `lock_file` for the block, re-entrant within a process; when another process holds it past the timeout,
    raise `busy(<who holds it>)`. The outermost holder writes its pid and command line to `holder`."""
    from filelock import FileLock, Timeout

    from sdcompile.util.fsutil import atomic_write_text

    lock = FileLock(lock_file, timeout=lock_timeout(), is_singleton=True)
    try:
        lock.acquire()
    except Timeout:
        raise busy(describe_holder(holder)) from None
    outermost = lock.lock_counter == 1
    try:
        if outermost:
            atomic_write_text(holder, json.dumps({"pid": os.getpid(), "command": command_line()}))
        yield
    finally:
        if outermost:
            holder.unlink(missing_ok=True)
        lock.release()


@contextmanager
def pair_lock(pair_dir: Path) -> Iterator[None]:
    """Hold the workspace pair's lock for the block (see the module docstring); creates the pair folder."""
    pair_dir = Path(pair_dir).resolve()  # one lock object per pair in a process, however its path was spelled
    try:
        pair_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadInput(f"cannot create {pair_dir} for the pair's lock ({exc.strerror or exc})",
                       "make the workspace writable (or pass another --workdir) and run again") from exc

    def busy(who: str) -> BadInput:
        return BadInput(f"{pair_dir} is in use by {who}; nothing was changed",
                        "wait for that command to finish and run again (two commands on one pair would write the "
                        "same profiles and scratch copy)")

    with held_lock(pair_dir / PAIR_LOCK, pair_dir / PAIR_HOLDER, busy):
        yield


def pair_folder_of(path: Path) -> Path | None:
    """The workspace pair folder `path` is in (the nearest folder holding a state.json), or None."""
    for folder in (Path(path).resolve(), *Path(path).resolve().parents):
        if (folder / STATE_FILE).is_file():
            return folder
    return None
