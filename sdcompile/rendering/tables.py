"""Tables that fit the console's width: every renderer's tables are FitTables.

A FitTable is laid out when it is printed, from the width it is given:

- **table**: it fits at its natural width, or the console is at least WIDE columns and every column can have the
  width of its longest unbreakable token (then columns wrap at spaces only);
- **stacked**: otherwise, one `key: value` block per row, headed by the row's first cell(s), every line wrapped at
  spaces (a token longer than the width stays whole on its own line).

Rows identical in every cell but the `collapse` column are printed once, that cell saying how many
("6 sites: a, b, ...")."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from rich import box as boxes
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from sdcompile.rendering.layout import segments, wrap
from sdcompile.rendering.markup import text_from_markup

WIDE = 120  # below this many columns, a table that does not fit at its natural width is stacked
_PADDING = 2  # rich's default cell padding, one space each side
SHORT = 32  # a stacked value this long or shorter, on one line, shares its line with the next short ones


@dataclass
class _Column:
    header: str
    justify: str = "left"
    no_wrap: bool = False


def _text(cell: Any) -> Text:
    if isinstance(cell, Text):
        return cell
    return text_from_markup(str(cell)) if cell is not None else Text("")


def _widths(cell: Any) -> tuple[int, int]:
    """(longest unbreakable token, longest line) of one cell."""
    plain = _text(cell).plain
    tokens = plain.split()
    lines = plain.splitlines() or [""]
    return max((cell_len(t) for t in tokens), default=0), max(cell_len(line) for line in lines)


class FitTable:
    """A table the console lays out by its width (see the module's doc); add_column / add_row as rich's Table.
    `head`: how many leading cells head a stacked block. `collapse`: (column header, plural noun) of the column
    whose cells differ between rows that are otherwise identical. Stacked: `pack` lets short values share a line
    (else each keeps its column's place), `indent` shifts every line right."""

    def __init__(self, title: str | None = None, *, caption: str | None = None, head: int = 1,
                 collapse: tuple[str, str] | None = None, show_header: bool = True, show_lines: bool = False,
                 box: boxes.Box | None = boxes.HEAVY_HEAD, padding: tuple[int, int] = (0, 1), pack: bool = True,
                 indent: int = 0, show_edge: bool = True, **_ignored: Any):
        self.title, self.caption, self.head, self.collapse = title, caption, head, collapse
        self.pack, self.indent = pack, indent
        self.show_header, self.show_lines, self.box, self.padding = show_header, show_lines, box, padding
        self.show_edge = show_edge
        self.columns: list[_Column] = []
        self.rows: list[list[Any]] = []

    def add_column(self, header: str = "", *, justify: str = "left", no_wrap: bool = False, **_ignored: Any) -> None:
        """`overflow`, `ratio` and the like are ignored: the layout never splits a token."""
        self.columns.append(_Column(header, justify, no_wrap))

    def add_row(self, *cells: Any) -> None:
        self.rows.append(list(cells) + [""] * (len(self.columns) - len(cells)))

    # ---------------------------------------------------------------------------------------------- layout
    def collapsed_rows(self) -> list[list[Any]]:
        """The rows, those identical but for the collapse column printed once with a count."""
        if self.collapse is None:
            return self.rows
        header, noun = self.collapse
        at = next(i for i, c in enumerate(self.columns) if c.header == header)
        groups: dict[tuple, list[list[Any]]] = {}
        for row in self.rows:
            key = tuple(str(c) for i, c in enumerate(row) if i != at)
            groups.setdefault(key, []).append(row)
        out = []
        for rows in groups.values():
            row = list(rows[0])
            if len(rows) > 1:
                row[at] = f"{len(rows)} {noun}: " + ", ".join(str(r[at]) for r in rows)
            out.append(row)
        return out

    def _gap(self) -> int:
        """What a row adds to its cells' widths: padding and vertical rules."""
        pad = self.padding[1] * 2 if len(self.padding) == 2 else _PADDING
        rules = (len(self.columns) + 1) if self.box is not None else 0
        return pad * len(self.columns) + rules

    def measure(self, rows: list[list[Any]]) -> tuple[list[int], list[int]]:
        """Per column: (longest token, longest line) over its header and cells."""
        mins, maxes = [], []
        for i, column in enumerate(self.columns):
            cells = ([column.header] if self.show_header else []) + [row[i] for row in rows]
            widths = [_widths(c) for c in cells]
            mins.append(max((w[0] for w in widths), default=0))
            maxes.append(max((w[1] for w in widths), default=0))
        return mins, maxes

    def layout(self, width: int, rows: list[list[Any]]) -> tuple[str, list[int] | None]:
        """("table", None) at natural widths, ("table", widths) squeezed, or ("stacked", None)."""
        mins, maxes = self.measure(rows)
        gap = self._gap()
        if sum(maxes) + gap <= width:
            return "table", None
        if width < WIDE or sum(mins) + gap > width:
            return "stacked", None
        return "table", _share(width - gap, mins, maxes)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[RenderableType | Segment]:
        rows = self.collapsed_rows()
        mode, widths = self.layout(options.max_width, rows)
        if mode == "table":
            yield self._table(rows, widths)
        else:
            pad = Text(" " * self.indent)
            yield from segments(console, [pad + line for line in self._stacked(rows, options.max_width - self.indent)])

    def _table(self, rows: list[list[Any]], widths: list[int] | None) -> Table:
        table = Table(title=self.title, caption=self.caption, title_justify="left", caption_justify="left",
                      show_header=self.show_header, show_lines=self.show_lines, box=self.box, padding=self.padding,
                      show_edge=self.show_edge)
        for i, column in enumerate(self.columns):
            table.add_column(column.header, justify=column.justify, overflow="fold",
                             width=widths[i] if widths else None, no_wrap=column.no_wrap and widths is None)
        for row in rows:
            table.add_row(*row)
        return table

    def _stacked(self, rows: list[list[Any]], width: int) -> list[Text]:
        lines: list[Text] = []
        if self.title:
            lines += wrap(_text(self.title), width, indent=0)
        for row in rows:
            head = Text(" ").join(_text(c) for c in row[:self.head] if _text(c).plain.strip())
            indent = " " * (len(head.plain) - len(head.plain.lstrip(" ")) + 2)
            short, long = self._fields(row, len(indent) + 2)
            if head.plain and "\n" not in head.plain and short and \
                    cell_len(head.plain) + 3 + cell_len(short[0].plain) <= width:
                lines += _pack(short, width, head, indent)
            else:
                lines += wrap(_indent(head, len(indent)), width) if head.plain else []
                lines += _pack(short, width, None, indent)
            for field in long:
                lines += wrap(Text(indent) + field, width)
        if self.caption:
            lines += wrap(_text(self.caption), width, indent=0)
        return lines

    def _fields(self, row: list[Any], hang: int) -> tuple[list[Text], list[Text]]:
        """A row's cells after its head as `header: value` texts, a value's later lines `hang` spaces in: (short
        one-line ones, the others)."""
        short, long = [], []
        for column, cell in zip(self.columns[self.head:], row[self.head:], strict=False):
            value = _text(cell)
            if not value.plain.strip():
                continue
            field = Text(f"{column.header}: " if self.show_header and column.header else "") + _indent(value, hang)
            fits = self.pack and "\n" not in value.plain and cell_len(value.plain) <= SHORT
            (short if fits else long).append(field)
        return short, long


def _pack(fields: list[Text], width: int, start: Text | None, indent: str) -> list[Text]:
    """Short fields joined with ` · ` on as few lines as fit, after `start` (the row's head) when given."""
    lines: list[Text] = []
    current = start
    for field in fields:
        if current is not None and cell_len(current.plain) + 3 + cell_len(field.plain) <= width:
            current = current + Text(" · ") + field
            continue
        if current is not None:
            lines.append(current)
        current = Text(indent) + field
    return lines + ([current] if current is not None else [])


def _indent(value: Text, spaces: int) -> Text:
    """A multi-line cell's later lines indented (its first follows the label)."""
    if "\n" not in value.plain:
        return value
    first, *rest = value.split("\n", allow_blank=True)
    return Text("\n").join([first, *(Text(" " * spaces) + line for line in rest)])


def _share(room: int, mins: list[int], maxes: list[int]) -> list[int]:
    """Column widths in `room`: the widest columns give way first, none below its longest token, so short columns
    keep their natural width."""
    widths = list(maxes)
    for _ in range(sum(maxes) - room):
        shrinkable = [i for i in range(len(widths)) if widths[i] > mins[i]]
        if not shrinkable:
            break
        widths[max(shrinkable, key=lambda i: widths[i])] -= 1
    return widths


@dataclass(frozen=True)
class Folded:
    """Rows a table leaves out: `count` consecutive rows alike the rows either side of them."""

    count: int


def fold_alike(rows: list, key, keep_all: bool = False) -> list:
    """`rows` with each run of consecutive rows of the same `key` cut to its first and last row, the rows between
    them one `Folded`: a table whose length grows with the input shows what differs and counts what repeats.
    `keep_all` (-v) keeps every row."""
    if keep_all:
        return list(rows)
    out, start = [], 0
    while start < len(rows):
        end = start
        while end + 1 < len(rows) and key(rows[end + 1]) == key(rows[start]):
            end += 1
        if end - start >= 3:  # folding fewer than two rows saves no line
            out += [rows[start], Folded(end - start - 1), rows[end]]
        else:
            out += rows[start:end + 1]
        start = end + 1
    return out
