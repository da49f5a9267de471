"""The one output sink: data to stdout (a rich rendering or one JSON document), messages to stderr."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable
from typing import Any, TextIO

from rich.console import Console
from rich.text import Text

from sdcompile.rendering.closing import Verdict
from sdcompile.rendering.layout import Wrapped
from sdcompile.rendering.markup import styles_only
from sdcompile.util.serialize import dumps, to_jsonable

_stdout: Console | None = None
_stderr: Console | None = None
_notes: list[str] = []  # said before the command's first output (note_before_output)
FALLBACK_WIDTH = 80


def _terminal_width(stream: TextIO) -> int | None:
    try:
        return os.get_terminal_size(stream.fileno()).columns if stream.isatty() else None
    except (OSError, ValueError, AttributeError):
        return None


def output_width(stream: TextIO, other: TextIO) -> int | None:
    """None on a terminal (rich asks it). Otherwise (a pipe, a file, a CI log): $COLUMNS when set, else the width
    of the terminal `other` is on (stderr for stdout), else FALLBACK_WIDTH."""
    if stream.isatty():
        return None
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    return _terminal_width(other) or FALLBACK_WIDTH


_TAIL = re.compile(r"(?:[ \t]|\x1b\[[0-9;]*m)+$")
_SGR = re.compile(r"\x1b\[[0-9;]*m")


def trim_line(line: str) -> str:
    """A line without the spaces ending it (rich pads titles, rules and cells to the width); style codes kept."""
    tail = _TAIL.search(line)
    if tail is None:
        return line
    return line[:tail.start()] + "".join(_SGR.findall(tail.group(0)))


class TrimmedStream:
    """A text stream writing every line without its trailing spaces. A line is written once it ends (or on
    flush)."""

    def __init__(self, stream: TextIO):
        self.stream = stream
        self._pending = ""

    def write(self, text: str) -> int:
        *lines, self._pending = (self._pending + text).split("\n")
        if lines:
            self.stream.write("\n".join(trim_line(line) for line in lines) + "\n")
        return len(text)

    def flush(self) -> None:
        if self._pending:
            self.stream.write(self._pending)
            self._pending = ""
        self.stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


class SinkConsole(Console):
    """The sink's console: lines wrap at spaces only (rendering.layout: a number, path or command is never split)
    and are never cropped, no line ends in spaces, and markup is only the renderers' styles (rendering.markup)."""

    def __init__(self, file: TextIO, width: int | None, trim: bool = True, **kwargs: Any):
        self.target = file
        super().__init__(file=TrimmedStream(file) if trim else file, width=width, soft_wrap=False, **kwargs)

    def render_str(self, text: str, *args: Any, markup: bool | None = None, **kwargs: Any) -> Text:
        if markup or (markup is None and self._markup):
            text = styles_only(text)  # a bracket in the text is kept, not taken for a style (rendering.markup)
        return super().render_str(text, *args, markup=markup, **kwargs)

    def print(self, *objects: Any, **kwargs: Any) -> None:  # type: ignore[override]
        if _notes:
            _say_notes()
        if len(objects) == 1 and not (kwargs.get("soft_wrap") or kwargs.get("no_wrap") or kwargs.get("overflow")):
            obj = objects[0]
            if isinstance(obj, str):
                obj = self.render_str(obj, markup=kwargs.get("markup"), highlight=kwargs.get("highlight"),
                                      emoji=kwargs.get("emoji"))
            if isinstance(obj, Text):
                objects = (Wrapped(obj),)
        kwargs.setdefault("crop", False)
        super().print(*objects, **kwargs)


class _DataConsole(SinkConsole):
    def on_broken_pipe(self) -> None:
        # rich exits 1 here, which reads as a failed gate: the rest goes nowhere and the command keeps its own code
        self.quiet = True
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def stdout() -> Console:
    global _stdout
    if _stdout is None or _stdout.target is not sys.stdout:
        _stdout = _DataConsole(sys.stdout, output_width(sys.stdout, sys.stderr))
    return _stdout


def note_before_output(text: str) -> None:
    """A note about the whole command (the torch it runs on), said on stderr just before its first output, so a
    command that stops at bad input says only its one error line, and -q silences it as every note."""
    _notes.append(text)


def _say_notes() -> None:
    notes = list(_notes)
    _notes.clear()
    for note in notes:
        stderr().print(Text(note), soft_wrap=True)


def stderr() -> Console:
    """The console of messages, progress and status lines; silent under -q (errors are written beside it)."""
    from sdcompile.util.log import is_quiet

    global _stderr
    if _stderr is None or _stderr.target is not sys.stderr:
        # a terminal's progress display rewrites its lines: only a log or a pipe is trimmed
        _stderr = SinkConsole(sys.stderr, output_width(sys.stderr, sys.stdout), trim=not sys.stderr.isatty())
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


def json_document(result: Any, verdict: Verdict) -> Any:
    """`result` as --json prints it: every document says its `verdict` as one word (pass, fail, info or dry run),
    the closing line's (a result whose own `verdict` field is that word keeps it)."""
    document = to_jsonable(result)
    if isinstance(document, dict):
        document.setdefault("verdict", verdict.word.lower())
    return document


def emit(result: Any, as_json: bool, render: Callable[[Console, Any], None],
         verdict: Callable[[Any], Verdict]) -> None:
    """Print `result` as one JSON document, or hand it to its renderer on the stdout console. Under --json nothing
    is rendered: the verdict line (`verdict(result)`, the one the renderer closes with) goes to stderr, last, so a
    CI log carries it whatever the step does with stdout."""
    stream = _json_stream if as_json and _json_stream is not None and sys.stdout is sys.stderr else sys.stdout
    try:
        if as_json:
            closing = verdict(result)
            # indented for a reader at a terminal; one line for a program (Python's encoder is 2-3x slower
            # indenting, which is most of the time on a whole run's profile report)
            indent = 2 if stream.isatty() else None
            stream.write(json.dumps(json_document(result, closing), indent=indent, ensure_ascii=False) + "\n")
            stream.flush()
            stderr().print(Text(closing.line), soft_wrap=True)
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


def rendered(render: Callable[..., None], result: Any, width: int, **options: Any) -> str:
    """What `render` prints for `result` on a `width`-column pipe, as the sink prints it (for tests and golden
    files: no colour, lines trimmed)."""
    import io

    buffer = io.StringIO()
    console = SinkConsole(buffer, width, color_system=None, force_terminal=False)
    render(console, result, **options)
    console.file.flush()
    return buffer.getvalue()
