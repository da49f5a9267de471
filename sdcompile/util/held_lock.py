"""A file lock whose holder says who it is: the mechanism behind the target tree's lock and the workspace pair's.

    <lock file>      flock (filelock), held by the command for the block
    <holder file>    {"pid", "command"} of the outermost holder, to name it to a command that waits

A second command waits up to $SDCOMPILE_LOCK_TIMEOUT seconds (default 10), then gets the caller's BadInput
naming the holder. Re-entrant within a process: `run` calls phases that take the same locks.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from sdcompile.util.command_line import CommandLine
from sdcompile.util.errors import BadInput
from sdcompile.util.fsutil import atomic_write_text
from sdcompile.util.input_checks import writable_dir

TIMEOUT_ENV = "SDCOMPILE_LOCK_TIMEOUT"
DEFAULT_TIMEOUT = 10.0


def command_line() -> str:
    """This process's command line, as the holder of a lock names it."""

    return str(CommandLine("sdcompile", tuple(sys.argv[1:])))


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


def make_lock_folder(folder: Path, what: str, fix: str) -> None:
    """Create `folder` for a lock unless its permission bits say no: as root mkdir would succeed in a folder marked
    read-only, and a read-only tree must stay as it is."""

    try:
        writable_dir(folder, what)
    except BadInput as exc:
        raise BadInput(f"cannot keep {exc.message}", fix) from None
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadInput(f"cannot create {folder} for {what} ({exc.strerror or exc})", fix) from exc


@contextmanager
def held_lock(lock_file: Path, holder: Path, busy: Callable[[str], BadInput]) -> Iterator[None]:
    """Hold `lock_file` for the block; when another process holds it past the timeout, raise `busy(<who>)`."""
    from filelock import FileLock, Timeout

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
