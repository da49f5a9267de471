"""Columnar reading of one rank's kernel CSV: only the columns a command needs, with pyarrow's multithreaded
CSV reader; every cell quirk of the profiler's output handled here and nowhere else.

Quirks: UTF-8 BOM; CRLF line endings; `Start Time(us)` with a trailing TAB (sometimes quoted); `N/A` for missing
values (Type and Accelerator Core may be `N/A` at Level0); shape cells that keep literal double quotes.
Start times are kept exact as integer nanoseconds (a float64 cannot hold an epoch in microseconds to the ns).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from sdcompile.errors import BadInput
from sdcompile.profiles import headers as H
from sdcompile.profiles.headers import Header, parse_header
from sdcompile.profiles.locate import RankFile

NULLS = ["N/A", "n/a", "NA", ""]
_TYPES = {
    H.NAME: pa.string(),
    H.TYPE: pa.string(),
    H.CORE: pa.string(),
    H.START: pa.decimal128(22, 3),  # exact: the CSV reader trims the TAB; a string re-read handles odd cells
    H.DURATION: pa.float64(),
    H.STEP: pa.int64(),
    H.DEVICE: pa.string(),
}
_HEADER_PROBE = 1 << 16
_FIX = "pass the kernel_details.csv as the profiler wrote it (re-export it if it was cut short or edited)"


@dataclass(frozen=True)
class RankTable:
    rank: RankFile
    header: Header
    table: pa.Table  # canonical column names; Name and Type trimmed, Type null where N/A; `start_ns` int64
    missing_durations: int  # rows whose Duration(us) was N/A (counted as 0 us)

    @property
    def rows(self) -> int:
        return self.table.num_rows


def read_header(path: Path) -> Header:
    with open(path, "rb") as fh:
        head = fh.read(_HEADER_PROBE)
    if not head.strip(b"\xef\xbb\xbf \t\r\n"):
        raise BadInput(f"{path} is empty", "profile again; an empty kernel_details.csv means the run wrote nothing")
    first = head.split(b"\n", 1)[0].rstrip(b"\r")
    try:
        line = first.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BadInput(f"{path}: the header is not UTF-8 text ({exc.reason} at byte {exc.start})",
                       "pass a kernel_details.csv (UTF-8 CSV)") from exc
    return parse_header(line, str(path))


def read_rank(rank: RankFile, columns: set[str]) -> RankTable:
    """Read `columns` (canonical names; Name and Duration(us) always) from one rank's file."""
    header = read_header(rank.path)
    wanted = [c for c in header.canonical if c in (columns | set(H.REQUIRED))]
    types = {c: _TYPES[c] for c in wanted if c in _TYPES}
    try:
        table = _read(rank, header, wanted, types)
    except pa.ArrowInvalid as exc:
        if H.START not in wanted or "decimal" not in str(exc).lower():
            raise BadInput(f"{rank.path}: {_explain(str(exc), header)}", _FIX) from exc
        # start times with more than three decimals, or other odd cells: read them as text, parse exactly
        try:
            table = _read(rank, header, wanted, {**types, H.START: pa.string()})
        except pa.ArrowInvalid as exc2:
            raise BadInput(f"{rank.path}: {_explain(str(exc2), header)}", _FIX) from exc2
    if table.num_rows == 0:
        raise BadInput(f"{rank.path} has a header but no kernel rows",
                       "profile a run that launches kernels (check the profiler's schedule and activities)")
    return _clean(rank, header, table)


def _read(rank: RankFile, header: Header, wanted: list[str], types: dict[str, pa.DataType]) -> pa.Table:
    return pacsv.read_csv(
        rank.path,
        read_options=pacsv.ReadOptions(skip_rows=1, column_names=_unique(header.canonical), block_size=1 << 24),
        parse_options=pacsv.ParseOptions(newlines_in_values=False),
        convert_options=pacsv.ConvertOptions(
            include_columns=wanted,
            column_types=types,
            null_values=NULLS,
            strings_can_be_null=True,
            quoted_strings_can_be_null=True,
        ),
    )


def _unique(names: tuple[str, ...]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        out.append(n if seen[n] == 1 else f"{n}#{seen[n]}")
    return out


def _explain(message: str, header: Header) -> str:
    first = message.strip().splitlines()[0]
    if "invalid UTF8" in first or "UTF8" in first:
        return f"undecodable bytes (not UTF-8) in a column sdcompile reads: {first}"
    m = re.search(r"Expected (\d+) columns, got (\d+)", first)
    if m:
        return (f"a row has {m.group(2)} cells where the header has {m.group(1)} columns — the file is truncated "
                f"or not one CSV table ({first[:200]})")
    m = re.search(r"column #(\d+)", first)
    if m and "conversion" in first.lower():
        return f"a value in column {header.original[int(m.group(1))]!r} cannot be read: {first[:200]}"
    return first[:300]


def _clean(rank: RankFile, header: Header, table: pa.Table) -> RankTable:
    cols = {}
    for name in table.column_names:
        col = table[name]
        if name in (H.NAME, H.TYPE, H.CORE, H.DEVICE):
            col = pc.utf8_trim(col, characters='\t "')
            if name != H.NAME:  # a Type of "N/A" (even quoted/tabbed) is missing: derive it from Name later
                col = pc.if_else(pc.is_in(col, pa.array(NULLS)), pa.scalar(None, pa.string()), col)
        cols[name] = col
    if H.NAME in cols and cols[H.NAME].null_count:
        cols[H.NAME] = pc.fill_null(cols[H.NAME], "")
    missing = table[H.DURATION].null_count
    cols[H.DURATION] = pc.fill_null(table[H.DURATION], 0.0)
    if H.START in cols:
        cols["start_ns"] = exact_start_ns(cols.pop(H.START), rank.path)
    return RankTable(rank, header, pa.table(cols), missing)


def exact_start_ns(column: pa.ChunkedArray | pa.Array, path: Path | str = "") -> pa.ChunkedArray:
    """`Start Time(us)` (epoch microseconds: decimals, or strings with a trailing TAB, maybe quoted) as exact int64
    nanoseconds."""
    if pa.types.is_decimal(column.type):
        return pc.cast(pc.multiply(column, pa.scalar(Decimal(1000), pa.decimal128(5, 0))), pa.int64())
    text = pc.utf8_trim(column, characters='\t "\r')
    text = pc.if_else(pc.is_in(text, pa.array(NULLS)), pa.scalar(None, pa.string()), text)
    try:
        # Fast path, what the profiler writes: exactly three decimals (ns), so dropping the point gives the ns.
        dot = pc.find_substring(text, ".")
        if pc.all(pc.equal(dot, pc.subtract(pc.utf8_length(text), 4))).as_py() is not False:
            return pc.cast(pc.replace_substring(text, ".", ""), pa.int64())
        micro = pc.cast(text, pa.decimal128(38, 9))
        micro = pc.cast(pc.round(micro, 3), pa.decimal128(30, 3))  # sub-ns digits, if any, rounded to the ns
        return pc.cast(pc.multiply(micro, pa.scalar(Decimal(1000), pa.decimal128(5, 0))), pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise BadInput(f"{path}: a Start Time(us) cell is not a number ({str(exc).splitlines()[0][:200]})",
                       _FIX) from exc
