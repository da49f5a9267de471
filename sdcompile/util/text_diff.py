"""One unified diff for every file sdcompile shows or writes a diff of (register's and scaffold's previews, the
`backend.diff` users feed to `patch -p1`): git's a/ b/ prefixes, /dev/null for a file that does not exist yet, and
the "\\ No newline at end of file" marker without which `patch` misreads a last line that has no newline."""

from __future__ import annotations

import difflib

NO_NEWLINE = "\\ No newline at end of file\n"


def unified_diff(old: str | bytes | None, new: str | bytes, relative: str) -> str:
    """The diff turning `old` (None: no file) into `new`, for the file at `relative` (a posix path in the tree);
    "" when they are equal. Bytes are read as UTF-8, undecodable bytes replaced."""
    old_text, new_text = _text(old or ""), _text(new)
    lines = difflib.unified_diff(old_text.splitlines(keepends=True), new_text.splitlines(keepends=True),
                                 fromfile="/dev/null" if old is None else f"a/{relative}", tofile=f"b/{relative}")
    return "".join(line if line.endswith("\n") else line + "\n" + NO_NEWLINE for line in lines)


def _text(data: str | bytes) -> str:
    return data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
