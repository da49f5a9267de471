"""The one output sink: data to stdout (a rich rendering or one JSON document), messages to stderr."""

from __future__ import annotations

import dataclasses
import enum
import json
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import PurePath
from typing import Any

from rich.console import Console

_stdout: Console | None = None
_stderr: Console | None = None


def _width() -> int | None:
    # Non-terminals (CI logs, pipes) get a wide fixed width so tables do not wrap into unreadable columns.
    if sys.stdout.isatty():
        return None
    return int(os.environ.get("COLUMNS", "160"))


def stdout() -> Console:
    global _stdout
    if _stdout is None or _stdout.file is not sys.stdout:
        _stdout = Console(file=sys.stdout, width=_width(), soft_wrap=False)
    return _stdout


def stderr() -> Console:
    global _stderr
    if _stderr is None or _stderr.file is not sys.stderr:
        _stderr = Console(file=sys.stderr, width=_width(), soft_wrap=False)
    return _stderr


def message(text: str) -> None:
    """A human message (progress, notes, warnings): always stderr, so stdout stays parseable."""
    stderr().print(text, highlight=False)


def to_jsonable(obj: Any) -> Any:
    """Dataclasses, paths, enums, tuples and sets as plain JSON values."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        items = sorted(obj, key=str) if isinstance(obj, (set, frozenset)) else obj
        return [to_jsonable(v) for v in items]
    if isinstance(obj, PurePath):
        return str(obj)
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, float) and (obj != obj or obj in (float("inf"), float("-inf"))):
        return str(obj)
    return obj


def dumps(result: Any) -> str:
    return json.dumps(to_jsonable(result), indent=2, ensure_ascii=False)


def emit(result: Any, as_json: bool, render: Callable[[Console, Any], None]) -> None:
    """Print `result` as one JSON document, or hand it to its renderer on the stdout console."""
    if as_json:
        sys.stdout.write(dumps(result) + "\n")
        sys.stdout.flush()
    else:
        render(stdout(), result)
