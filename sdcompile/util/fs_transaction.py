"""Writing several files as one change: all of them or none, even when the process is interrupted.

`commit_all` first checks every file is writable and unchanged since the edit was computed. With a journal it
then records its intent (every file's original bytes and the digest of its new content), stages every new
content in `.<name>.<pid>.tmp` beside its target, marks the journal "committing" and renames the staged files
into place with SIGINT/SIGTERM deferred, and finally removes the journal. Any exception (KeyboardInterrupt
included) puts back the files already replaced and removes the staged copies. A process killed outright leaves
the journal, and `recover` finishes its renames ("committing") or discards its staged copies ("prepared").
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import signal
import stat
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from sdcompile.util.errors import BadInput

ALL_UNCHANGED = "every file is unchanged"
JOURNAL_SCHEMA = 1

# Called with the name of each step ("prepared", "staged <name>", "committing", "replaced <name>"); tests set it
# to interrupt a commit at a chosen point.
step_hook: Callable[[str], None] | None = None


@dataclass(frozen=True)
class PlannedWrite:
    path: Path
    original: bytes | None  # what the file held when the new content was computed; None for a new file
    new: bytes


@dataclass(frozen=True)
class Journal:
    path: Path  # the intent journal file
    base: Path  # paths in it are relative to this folder (the tree), so a moved tree still recovers
    command: str  # the command that wrote it, for the report of a later recovery


@dataclass(frozen=True)
class Recovery:
    command: str  # the interrupted command
    action: str  # "completed" (its renames finished) or "rolled back" (its staged copies discarded)
    files: tuple[str, ...]  # relative to the journal's base

    def one_line(self) -> str:
        if not self.command:  # staged copies without a journal: killed before it was written
            return f"stale staged files of an interrupted command were removed ({', '.join(self.files)})"
        return f"an interrupted `{self.command}` was {self.action} ({', '.join(self.files)})"


def _step(name: str) -> None:
    if step_hook is not None:
        step_hook(name)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _staged_path(path: Path) -> Path:
    # A fixed name (not mkstemp's random one) so the journal can name it before it exists; the tree lock makes the
    # pid unique among writers.
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def _refuse_unwritable(path: Path) -> None:
    # The write bits are checked as well as access(): root may write anything, but a file marked read-only says
    # its owner does not want it changed, and an atomic rename would silently replace it.
    st = path.stat()
    if not (st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)) or not os.access(path, os.W_OK):
        raise BadInput(f"{path} is read-only; {ALL_UNCHANGED}", "make it writable (chmod u+w) and run again")
    _refuse_unwritable_folder(path.parent)


def _refuse_unwritable_folder(folder: Path) -> None:
    st = folder.stat()
    if not (st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)) or not os.access(folder, os.W_OK | os.X_OK):
        raise BadInput(f"cannot write in {folder}; {ALL_UNCHANGED}", "make the folder writable and run again")


def _new_file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _write_synced(path: Path, data: bytes, mode: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.chmod(path, mode)


def _write_journal(journal: Journal, state: str, writes: Sequence[PlannedWrite]) -> None:
    payload = {
        "schema_version": JOURNAL_SCHEMA,
        "command": journal.command,
        "pid": os.getpid(),
        "state": state,
        "files": [
            {
                "path": os.path.relpath(w.path, journal.base),
                "staged": os.path.relpath(_staged_path(w.path), journal.base),
                "original": None if w.original is None else base64.b64encode(w.original).decode("ascii"),
                "new_sha256": _digest(w.new),
            }
            for w in writes
        ],
    }
    journal.path.parent.mkdir(parents=True, exist_ok=True)
    tmp = journal.path.with_name(journal.path.name + ".tmp")
    _write_synced(tmp, json.dumps(payload, indent=1).encode("utf-8"), 0o644)
    os.replace(tmp, journal.path)


@contextmanager
def deferred_signals() -> Iterator[None]:
    """SIGINT and SIGTERM received in the block take effect when it ends (only the main thread can do this)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, _frame: received.append(signum))
                for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for sig in dict.fromkeys(received):
            signal.raise_signal(sig)  # the handler the caller had: KeyboardInterrupt, or termination


def _check(writes: Sequence[PlannedWrite]) -> None:
    for w in writes:
        if w.original is None:
            if w.path.exists() or w.path.is_symlink():
                raise BadInput(f"{w.path} appeared while the edit was prepared; {ALL_UNCHANGED}",
                               "run the command again")
            _refuse_unwritable_folder(w.path.parent)
            continue
        if not w.path.is_file():
            raise BadInput(f"{w.path} does not exist any more; {ALL_UNCHANGED}", "run the command again")
        _refuse_unwritable(w.path)
        if w.path.read_bytes() != w.original:
            raise BadInput(f"{w.path} changed while the edit was prepared; {ALL_UNCHANGED}", "run the command again")


def commit_all(writes: Sequence[PlannedWrite], journal: Journal | None = None) -> None:
    """Replace every `path` with `new`, all or nothing. Raises BadInput naming the file that prevented it."""
    # A symlinked file is edited through the link: replacing the link itself would leave its target unedited.
    writes = [replace(w, path=w.path.resolve()) if w.path.is_symlink() else w for w in writes if w.new != w.original]
    if not writes:
        return
    _check(writes)
    staged: list[Path] = []
    try:
        if journal is not None:
            _write_journal(journal, "prepared", writes)
            _step("prepared")
        for w in writes:
            tmp = _staged_path(w.path)
            staged.append(tmp)
            mode = _new_file_mode() if w.original is None else stat.S_IMODE(w.path.stat().st_mode)
            try:
                _write_synced(tmp, w.new, mode)
            except OSError as exc:
                raise BadInput(f"could not write {w.path} ({exc.strerror or exc}); {ALL_UNCHANGED}",
                               "free space or fix permissions and run again") from exc
            _step(f"staged {w.path.name}")
        with deferred_signals():
            if journal is not None:
                _write_journal(journal, "committing", writes)
                _step("committing")
            _replace_all(writes)
            if journal is not None:
                journal.path.unlink(missing_ok=True)
    except BaseException:
        for tmp in staged:
            tmp.unlink(missing_ok=True)
        if journal is not None:
            journal.path.unlink(missing_ok=True)
        raise


def _replace_all(writes: Sequence[PlannedWrite]) -> None:
    """Rename every staged file into place; on any exception put back the files already replaced."""
    done: list[PlannedWrite] = []
    failed = writes[0].path
    try:
        for w in writes:
            failed = w.path
            os.replace(_staged_path(w.path), w.path)
            done.append(w)
            _step(f"replaced {w.path.name}")
    except BaseException as exc:
        errors = []
        for d in reversed(done):
            try:
                _restore(d.path, d.original)
            except OSError as restore_exc:  # report, keep restoring the others
                errors.append(f"{d.path}: {restore_exc}")
        why = f"{exc.strerror or exc}" if isinstance(exc, OSError) else type(exc).__name__
        if errors:
            raise BadInput(f"could not write {failed} ({why}) and could not restore {'; '.join(errors)}",
                           "restore those files from version control") from exc
        if isinstance(exc, OSError):
            raise BadInput(f"could not write {failed} ({why}); {ALL_UNCHANGED}", "fix the cause and run again") from exc
        raise


def _restore(path: Path, original: bytes | None) -> None:
    if original is None:
        path.unlink(missing_ok=True)
        return
    tmp = path.with_name(f".{path.name}.{os.getpid()}.restore")
    try:
        _write_synced(tmp, original, stat.S_IMODE(path.stat().st_mode) if path.exists() else _new_file_mode())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def recover(journal_path: Path, base: Path) -> Recovery | None:
    """Finish or undo the commit an earlier process left in `journal_path` (the caller holds the tree's lock)."""
    if not journal_path.is_file():
        return None
    bad = BadInput(f"{journal_path} is not an sdcompile transaction journal",
                   "check the files it names against version control, then delete it")
    try:
        data = json.loads(journal_path.read_text(encoding="utf-8"))
        files = data["files"]
        state, command = data["state"], str(data["command"])
        entries = [(base / f["path"], base / f["staged"], f["original"], f["new_sha256"]) for f in files]
    except (ValueError, KeyError, TypeError) as exc:
        raise bad from exc
    if state not in ("prepared", "committing"):
        raise bad
    rel = tuple(str(path.relative_to(base)) for path, *_ in entries)
    complete = state == "committing" and all(
        (staged.is_file() and _digest(staged.read_bytes()) == new)
        or (path.is_file() and _digest(path.read_bytes()) == new)
        for path, staged, _, new in entries
    )
    with deferred_signals():
        for path, staged, original, _new in entries:
            if complete:
                if staged.is_file():  # not renamed yet; a file already replaced holds its new content
                    os.replace(staged, path)
                continue
            staged.unlink(missing_ok=True)
            if state == "committing":  # some files may hold the new content: put every original back
                _restore(path, None if original is None else base64.b64decode(original))
        journal_path.unlink()
    return Recovery(command, "completed" if complete else "rolled back", rel)
