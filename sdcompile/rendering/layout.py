"""Text that wraps only at spaces: a number, path, identifier or command is never split, and a token longer than
the width stays whole on its own line. The output sink (rendering.output) prints every plain line through it, and
the stacked tables of rendering.tables are made of it."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions
from rich.segment import Segment
from rich.text import Text

_WORD = re.compile(r"\s*\S+\s*")
CONTINUATION = 2  # a wrapped line's continuation is indented this much more than the line's own indent


def _first_break(text: str, width: int) -> int | None:
    """Where the first line of `text` ends when it is wrapped at spaces to `width`: None when it fits. A first
    word longer than `width` ends its line right after it."""
    offset = 0
    for match in _WORD.finditer(text):
        word = match.group(0)
        if offset and offset + cell_len(word.rstrip()) > width:
            return match.start()
        offset += cell_len(word)
    return None


def _leading_spaces(text: str) -> int:
    return len(text) - len(text.lstrip(" "))


_LABEL = re.compile(r" *\S+ {2,}(?=\S)")  # "  target    MindIE-SD ...": a label, then its value's column


def _hang(text: str) -> int:
    """Where a wrapped line continues: under a label's value ("  target    ..."), else two spaces in."""
    label = _LABEL.match(text)
    return label.end() if label else _leading_spaces(text) + CONTINUATION


def wrap_line(line: Text, width: int, indent: int | None = None) -> list[Text]:
    """One logical line wrapped at spaces to `width`; continuation lines are indented `indent` spaces (default:
    the line's own indent plus CONTINUATION, or under a label's value). Tokens are never split."""
    hang = _hang(line.plain) if indent is None else indent
    hang = min(hang, max(width // 2, 0))
    out: list[Text] = []
    rest, avail = line, max(width, 1)
    while True:
        cut = _first_break(rest.plain, avail)
        if cut is None:
            out.append(rest)
            break
        head, tail = rest.divide([cut])
        head.rstrip()
        out.append(head)
        tail = tail[_leading_spaces(tail.plain):]
        if not tail.plain:
            break
        rest, avail = Text(" " * hang) + tail, max(width, hang + 1)
    return out


def wrap(text: Text, width: int, indent: int | None = None) -> list[Text]:
    """Every line of `text` (split at newlines) wrapped with wrap_line."""
    lines: list[Text] = []
    for line in text.split("\n", allow_blank=True):
        lines += wrap_line(line, width, indent)
    return lines


def segments(console: Console, lines: Iterable[Text]) -> Iterator[Segment]:
    """Lines as segments, each whole (the console must not crop them: the sink prints with crop=False)."""
    for line in lines:
        yield from line.render(console)
        yield Segment.line()


class Wrapped:
    """A Text printed wrapped at spaces with a hanging indent, never splitting a token."""

    def __init__(self, text: Text, indent: int | None = None):
        self.text = text
        self.indent = indent

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Segment]:
        yield from segments(console, wrap(self.text, options.max_width, self.indent))


def print_code(console: Console, code: str, lexer: str) -> None:
    """Source or a diff, highlighted, every line whole: never wrapped into the next nor cropped at the width (a
    long line runs on; the terminal folds it), so what is shown is what the file holds."""
    from rich.syntax import Syntax

    text = Syntax(code.rstrip("\n"), lexer, theme="ansi_dark", background_color="default").highlight(code.rstrip("\n"))
    text.rstrip()
    console.print(text, soft_wrap=True)
