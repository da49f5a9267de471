"""The one output sink: data to stdout (a rich rendering or one JSON document), messages to stderr."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from rich.console import Console

from sdcompile.util.serialize import dumps

_stdout: Console | None = None
_stderr: Console | None = None


def _width() -> int | None:
    # Non-terminals (CI logs, pipes) get a wide fixed width so tables do not wrap into unreadable columns.
    if sys.stdout.isatty():
        return None
    return int(os.environ.get("COLUMNS", "160"))


class _DataConsole(Console):
    def on_broken_pipe(self) -> None:
        # rich exits 1 here, which reads as a failed gate: the rest goes nowhere and the command keeps its own code
        self.quiet = True
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def stdout() -> Console:
    global _stdout
    if _stdout is None or _stdout.file is not sys.stdout:
        _stdout = _DataConsole(file=sys.stdout, width=_width(), soft_wrap=False)
    return _stdout


def stderr() -> Console:
    """The console of messages, progress and status lines; silent under -q (errors are written beside it)."""
    from sdcompile.util.log import is_quiet

    global _stderr
    if _stderr is None or _stderr.file is not sys.stderr:
        _stderr = Console(file=sys.stderr, width=_width(), soft_wrap=False)
    _stderr.quiet = is_quiet()
    return _stderr


def message(text: str) -> None:
    """A human message (progress, notes, warnings): always stderr, so stdout stays parseable."""
    stderr().print(text, highlight=False)


_json_stream = None  # the real stdout while --json holds it for the JSON document


def reserve_stdout_for_json(on: bool = True) -> None:
    """Under --json stdout carries one JSON document only: anything else written there from now on (a model file's
    print, in its import, factory or forward) goes to stderr instead. `on=False` ends an earlier command's mode."""
    global _json_stream
    if not on:
        _json_stream = None
        return
    _json_stream = sys.stdout
    sys.stdout = sys.stderr


def emit(result: Any, as_json: bool, render: Callable[[Console, Any], None]) -> None:
    """Print `result` as one JSON document, or hand it to its renderer on the stdout console."""
    stream = _json_stream if as_json and _json_stream is not None and sys.stdout is sys.stderr else sys.stdout
    try:
        if as_json:
            stream.write(dumps(result) + "\n")
            stream.flush()
        else:
            render(stdout(), result)
    except BrokenPipeError:
        # The reader stopped (`status | head -1`): the rest goes nowhere and the command ends with its own code.
        os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())


def emit_error(line: str, exit_code: int) -> None:
    """Under --json, an error is a JSON document on stdout too, so a CI step reading stdout sees why it failed."""
    if _json_stream is not None and sys.stdout is sys.stderr:
        try:
            _json_stream.write(dumps({"error": line, "exit_code": exit_code}) + "\n")
            _json_stream.flush()
        except BrokenPipeError:
            pass
