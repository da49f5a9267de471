"""Writing several files as one change: all of them or none.

`commit_all` first checks every file is writable and unchanged since the edit was computed, then stages every
new content in a temporary file beside its target, and only then renames them into place. A failure before
the renames leaves every file untouched; a failure during them puts back the files already replaced.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sdcompile.errors import BadInput

ALL_UNCHANGED = "every file is unchanged"


@dataclass(frozen=True)
class PlannedWrite:
    path: Path
    original: bytes  # what the file held when the new content was computed
    new: bytes


def _refuse_unwritable(path: Path) -> None:
    # The write bits are checked as well as access(): root may write anything, but a file marked read-only says
    # its owner does not want it changed, and an atomic rename would silently replace it.
    st = path.stat()
    if not (st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)) or not os.access(path, os.W_OK):
        raise BadInput(f"{path} is read-only; {ALL_UNCHANGED}", "make it writable (chmod u+w) and run again")
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise BadInput(f"cannot write in {path.parent}; {ALL_UNCHANGED}", "make the folder writable and run again")


def _stage(write: PlannedWrite) -> Path:
    fd, tmp = tempfile.mkstemp(prefix=f".{write.path.name}.", suffix=".tmp", dir=write.path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(write.new)
            fh.flush()
            os.fsync(fh.fileno())
        st = write.path.stat()
        os.chmod(tmp, stat.S_IMODE(st.st_mode))
        return Path(tmp)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def commit_all(writes: Sequence[PlannedWrite]) -> None:
    """Replace every `path` with `new`, all or nothing. Raises BadInput naming the file that prevented it."""
    writes = [w for w in writes if w.new != w.original]
    for w in writes:
        if not w.path.is_file():
            raise BadInput(f"{w.path} does not exist any more; {ALL_UNCHANGED}", "run the command again")
        _refuse_unwritable(w.path)
        if w.path.read_bytes() != w.original:
            raise BadInput(f"{w.path} changed while the edit was prepared; {ALL_UNCHANGED}", "run the command again")

    staged: list[tuple[PlannedWrite, Path]] = []
    try:
        for w in writes:
            staged.append((w, _stage(w)))
    except OSError as exc:
        for _, tmp in staged:
            tmp.unlink(missing_ok=True)
        raise BadInput(f"could not write {w.path} ({exc.strerror or exc}); {ALL_UNCHANGED}", "free space or "
                       "fix permissions and run again") from exc

    done: list[PlannedWrite] = []
    try:
        for w, tmp in staged:
            os.replace(tmp, w.path)
            done.append(w)
    except OSError as exc:
        failed = w.path
        for _, tmp in staged:
            tmp.unlink(missing_ok=True)
        restore_errors = []
        for d in done:
            try:
                _restore(d)
            except OSError as restore_exc:  # report, keep restoring the others
                restore_errors.append(f"{d.path}: {restore_exc}")
        if restore_errors:
            raise BadInput(
                f"could not write {failed} ({exc.strerror or exc}) and could not restore {'; '.join(restore_errors)}",
                "restore those files from version control",
            ) from exc
        raise BadInput(f"could not write {failed} ({exc.strerror or exc}); {ALL_UNCHANGED}",
                       "fix the cause and run again") from exc


def _restore(write: PlannedWrite) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{write.path.name}.", suffix=".restore", dir=write.path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(write.original)
        os.chmod(tmp, stat.S_IMODE(write.path.stat().st_mode))
        os.replace(tmp, write.path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
