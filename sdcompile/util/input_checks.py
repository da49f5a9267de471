"""Paths and names from the command line, checked before any work: what reaches a file name, a generated source
or a shell line later must be something those can hold."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sdcompile.util.errors import BadInput

QUOTES = ('"', "'", "\\")  # would end or escape a string literal or a docstring of generated code


def name_max(folder: Path) -> int:
    """The longest file name (bytes) the file system at `folder` (or its nearest existing parent) allows."""
    for candidate in (folder, *folder.parents):
        try:
            return os.pathconf(candidate, "PC_NAME_MAX")
        except (OSError, ValueError):  # not there (yet), or its own name is already too long
            continue
    return 255


def check_name_length(name: str, what: str, folder: Path | None = None) -> str:
    limit = name_max(folder or Path.cwd())
    size = len(name.encode("utf-8", errors="surrogateescape"))
    if size > limit:
        raise BadInput(f"{what} {name[:40]!r}… is {size} bytes, longer than a file name may be here ({limit})",
                       "use a shorter name")
    return name


def check_path_text(text: str, what: str) -> str:
    """`text` if it has no control character or quote and every part fits a file name; BadInput otherwise."""
    control = next((c for c in text if ord(c) < 32 or ord(c) == 127), None)
    if control is not None:
        raise BadInput(f"{what} {text!r} contains the control character {control!r}",
                       "rename or move the file to a path without control characters")
    quote = next((q for q in QUOTES if q in text), None)
    if quote is not None:
        raise BadInput(f"{what} {text!r} contains {quote!r}, which generated code and commands cannot quote safely",
                       "rename or move the file to a path without quotes or backslashes")
    for part in Path(text).parts:
        check_name_length(part, f"{what}: the name", Path(text).parent)
    return text


def _kind(path: Path) -> str:
    import stat

    if path.is_symlink():
        return "a broken symbolic link" if not path.exists() else "a symbolic link"
    mode = path.stat().st_mode
    return {stat.S_IFREG: "a file", stat.S_IFDIR: "a folder", stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a device",
            stat.S_IFBLK: "a device", stat.S_IFSOCK: "a socket"}.get(stat.S_IFMT(mode), "not a regular file")


def check_output_file(path: Path, force: bool, option: str) -> Path:
    """`path` if a report may be written there: checked before the work that produces it, so a long run does not
    end in an unwritable path. --force replaces a regular file only: never a link, a FIFO, a device or a folder."""
    path = check_path_length(path, option)
    try:
        return _check_output_file(path, force, option)
    except OSError as exc:  # anything the checks themselves meet (a folder on the way that cannot be searched)
        raise BadInput(f"{option} {shown(path)}: {exc.strerror or exc}", f"choose another {option} path") from exc


def _check_output_file(path: Path, force: bool, option: str) -> Path:
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise BadInput(f"{option} {shown(path)} is {_kind(path)}; only a regular file is written or replaced "
                       "(even with --force)", f"choose another {option} path")
    if path.exists() and not force:
        raise BadInput(f"{shown(path)} already exists",
                       f"pass --force to overwrite it, or choose another {option} path")
    folder = path.parent
    if not folder.is_dir():
        raise BadInput(f"{option} {shown(path)}: the folder {shown(folder)} does not exist",
                       "create it, or choose another path")
    check_name_length(path.name, f"{option} file name", folder)
    _require_writable(folder, option, path)
    return path


def shown(path: Path | str) -> str:
    """`path` as a message shows it: as typed, or quoted when a control character would break the one line."""
    text = str(path)
    return repr(text) if any(ord(c) < 32 or ord(c) == 127 for c in text) else text


def writable_dir(path: Path | str, option: str) -> Path:
    """`path` if sdcompile may write files in it: an existing folder, or one it can create (its nearest existing
    parent is a folder it may write). Checked before the work, so a long run does not end in an OSError; a file,
    FIFO or device where the folder should be is refused whatever --force says. BadInput (exit 2) otherwise."""
    path = Path(path)
    try:
        _check_dir_path(path, option)
    except OSError as exc:  # anything the checks themselves meet (a folder on the way that cannot be searched)
        raise BadInput(f"{option} {shown(path)}: {exc.strerror or exc}",
                       f"choose another {option} folder") from exc
    return path


def check_path_length(path: Path | str, option: str) -> Path:
    """`path` if the system can look it up: no NUL byte, the whole path and each name within their limits. Every
    later stat or open of a longer one is an OSError, whatever the command does with it."""
    path = Path(path)
    if "\x00" in str(path):
        raise BadInput(f"{option} {shown(path)} contains a NUL byte, which no path can hold", f"fix the {option} path")
    where = path.absolute()
    limit = _path_max(where)
    size = len(os.fsencode(str(where)))
    if size > limit:
        raise BadInput(f"{option} {shown(path)[:60]}… is {size} bytes, longer than a path may be here ({limit})",
                       f"choose a shorter {option} path")
    for part in where.parts[1:]:
        check_name_length(part, f"{option} {shown(path)}: the name", where)
    return path


def _check_dir_path(path: Path, option: str) -> None:
    check_path_length(path, option)
    where = path.absolute()
    if path.is_symlink() and not path.exists():
        raise BadInput(f"{option} {shown(path)} is a broken symbolic link (to {shown(path.readlink())})",
                       f"remove the link, or choose another {option} folder")
    if path.exists():
        if not path.is_dir():
            raise BadInput(f"{option} {shown(path)} is {_kind(path)}, not a folder",
                           f"choose a folder for {option}, or a path where one can be created")
        _require_writable(path, option, path)
        return
    parent = next(p for p in where.parents if p.exists() or p.is_symlink())  # "/" always exists
    if not parent.is_dir():
        raise BadInput(f"{option} {shown(path)}: {shown(parent)} is {_kind(parent)}, not a folder, so the folder "
                       "cannot be created under it", f"choose another {option} path")
    _require_writable(parent, option, path)


def _path_max(where: Path) -> int:
    for candidate in where.parents:
        try:
            return os.pathconf(candidate, "PC_PATH_MAX")
        except (OSError, ValueError):
            continue
    return 4096


def _require_writable(folder: Path, option: str, path: Path) -> None:
    """BadInput unless files may be created in `folder`. By permission bits as well as access(): root may write
    anywhere, but a folder without any write bit says its owner wants nothing added (so it is refused for root
    too); a read-only file system refuses everyone."""
    st = folder.stat()
    read_only_fs = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    if st.st_mode & 0o222 and os.access(folder, os.W_OK | os.X_OK) and not read_only_fs:
        return
    if read_only_fs:
        why = "is on a read-only file system"
    elif not st.st_mode & 0o222:
        why = f"is not writable (mode {st.st_mode & 0o777:04o}, no write permission for anyone"
        why += "; sdcompile runs as root, which could write it anyway, but keeps to the permission bits)" \
            if os.geteuid() == 0 else ")"
    else:
        why = f"is not writable by this user (mode {st.st_mode & 0o777:04o}, owner uid {st.st_uid})"
    where = "" if folder == path else f": the folder {shown(folder)}"
    raise BadInput(f"{option} {shown(path)}{where} {why}",
                   f"make it writable (chmod u+w {shown(folder)}), or choose another {option} path")


@contextmanager
def reading(path: Path | str | None, option: str) -> Iterator[None]:
    """Around the reading of what the user named at `path` (a profile folder, a log, a catalog): an OSError there
    (a name too long, a folder that cannot be searched, /proc files that refuse reads) is BadInput naming it. With
    no path (an option not given) nothing the user named is read, and an OSError stays what it is."""
    try:
        yield
    except OSError as exc:
        if path is None:
            raise
        where = f" ({shown(exc.filename)})" if exc.filename and str(exc.filename) != str(path) else ""
        raise BadInput(f"{option} {shown(path)} cannot be read: {exc.strerror or exc}{where}",
                       f"pass a path for {option} that exists and this user can read") from exc
