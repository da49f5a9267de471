"""Paths and names from the command line, checked before any work: what reaches a file name, a generated source
or a shell line later must be something those can hold."""

from __future__ import annotations

import os
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
        return "a symbolic link"
    mode = path.stat().st_mode
    return {stat.S_IFDIR: "a folder", stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a device", stat.S_IFBLK: "a device",
            stat.S_IFSOCK: "a socket"}.get(stat.S_IFMT(mode), "not a regular file")


def check_output_file(path: Path, force: bool, option: str) -> Path:
    """`path` if a report may be written there: checked before the work that produces it, so a long run does not
    end in an unwritable path. --force replaces a regular file only: never a link, a FIFO, a device or a folder."""
    path = Path(path)
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise BadInput(f"{option} {path} is {_kind(path)}; only a regular file is written or replaced (even with "
                       "--force)", f"choose another {option} path")
    if path.exists() and not force:
        raise BadInput(f"{path} already exists", f"pass --force to overwrite it, or choose another {option} path")
    folder = path.parent
    if not folder.is_dir():
        raise BadInput(f"{option} {path}: the folder {folder} does not exist", "create it, or choose another path")
    check_name_length(path.name, f"{option} file name", folder)
    st = folder.stat()
    # Permission bits, not just access(): root may write anywhere, but a read-only folder says its owner does not
    # want files added.
    if not (st.st_mode & 0o222) or not os.access(folder, os.W_OK | os.X_OK):
        raise BadInput(f"{option} {path}: the folder {folder} is not writable", "make it writable, or choose another "
                       "path")
    return path
