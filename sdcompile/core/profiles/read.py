"""Columnar reading of one rank's kernel CSV: only the columns a command needs, with pyarrow's multithreaded
CSV reader; every cell quirk of the profiler's output handled here and nowhere else.

Quirks: UTF-8 BOM; CRLF line endings; `Start Time(us)` with a trailing TAB (sometimes quoted); `N/A` for missing
values (Type and Accelerator Core may be `N/A` at Level0); shape cells that keep literal double quotes.
Start times are kept exact as integer nanoseconds (a float64 cannot hold an epoch in microseconds to the ns).
"""

from __future__ import annotations

import csv
import functools
import os
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from sdcompile.core.profiles import headers as H
from sdcompile.core.profiles.headers import Header, parse_header
from sdcompile.core.profiles.locate import RankFile
from sdcompile.util.errors import BadInput

NULLS = ["N/A", "n/a", "NA", ""]
# Text columns are read dictionary-encoded: a run launches a few hundred distinct kernels a million times, so a
# column holds each name once and per-row work (trimming, matching, classifying) runs over the distinct values.
TEXT = pa.dictionary(pa.int32(), pa.string())
_START_DECIMAL = pa.decimal128(22, 3)  # exact: the CSV reader trims the TAB; a string re-read handles odd cells
_TYPES = {
    H.NAME: TEXT,
    H.TYPE: TEXT,
    H.CORE: TEXT,
    H.INPUT_SHAPES: TEXT,
    H.INPUT_DTYPES: TEXT,
    H.START: _START_DECIMAL,
    H.DURATION: pa.float64(),
    H.STEP: pa.int64(),
    H.DEVICE: TEXT,
}
_HEADER_PROBE = 1 << 16
# Bytes of the file one worker parses at a time. The file is split at line ends into pieces this size, parsed on
# every core, a few pieces in memory at once: pyarrow's whole-file reader held about twice the file (~1 GB for a
# 1M-row kernel_details.csv) and was no faster.
_PIECE = 4 << 20
_FIX = "pass the kernel_details.csv as the profiler wrote it (re-export it if it was cut short or edited)"


# How a rank's rows can be ordered: by exact start time, or only in file order and why.
EXACT, ABSENT, LOSSY, TIED = "exact start time", "no start-time column", "start times lossy", "start times all tied"
_EXPONENT = re.compile(r"^[\s\"]*[+-]?\d+(\.\d+)?[eE][+-]?\d+")
_SAMPLE_ROWS = 200


@dataclass(frozen=True)
class RankTable:
    rank: RankFile
    header: Header
    table: pa.Table  # canonical column names; Name and Type trimmed, Type null where N/A; `start_ns` int64
    missing_durations: int  # rows whose Duration(us) was N/A (counted as 0 us)
    ordering: str = ABSENT  # EXACT, or why rows keep file order (ABSENT, LOSSY, TIED); start_ns only when EXACT

    @property
    def rows(self) -> int:
        return self.table.num_rows


def read_header(path: Path) -> Header:
    return _probe(path)[0]


def _probe(path: Path) -> tuple[Header, list[str]]:
    """The header and the first lines after it (to see how the start-time cells are written)."""
    with open(path, "rb") as fh:
        head = fh.read(_HEADER_PROBE)
    if not head.strip(b"\xef\xbb\xbf \t\r\n"):
        raise BadInput(f"{path} is empty", "profile again; an empty kernel_details.csv means the run wrote nothing")
    lines = head.split(b"\n", _SAMPLE_ROWS + 1)
    first = lines[0].rstrip(b"\r")
    try:
        line = first.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BadInput(f"{path}: the header is not UTF-8 text ({exc.reason} at byte {exc.start})",
                       "pass a kernel_details.csv (UTF-8 CSV)") from exc
    sample = [b.decode("utf-8", "replace").rstrip("\r") for b in lines[1:_SAMPLE_ROWS + 1]]
    return parse_header(line, str(path)), sample


def _start_is_lossy(header: Header, sample: list[str]) -> bool:
    """Start times a spreadsheet rewrote in scientific notation (1.69512E+15) keep 6 digits: no order left."""
    index = header.canonical.index(H.START)
    try:
        for cells in csv.reader(sample[:-1] if len(sample) > 1 else sample):
            if len(cells) > index and _EXPONENT.match(cells[index]):
                return True
    except csv.Error:  # a stray carriage return inside a cell: the full read below says what is wrong with the file
        return False
    return False


def read_rank(rank: RankFile, columns: set[str]) -> RankTable:
    """Read `columns` (canonical names; Name and Duration(us) always) from one rank's file(s): msprof slices are
    read one by one, checked to share one header, and concatenated in slice order."""
    parts = [_read_file(path, columns) for path in rank.files]
    header = parts[0][0]
    for path, (h, *_rest) in zip(rank.files[1:], parts[1:], strict=True):
        if h.signature != header.signature:
            raise BadInput(f"{path}: its header differs from {rank.files[0].name}'s, another slice of the same rank",
                           "pass the slices of one msprof export together")
    orderings = {p[2] for p in parts}
    ordering = EXACT if orderings == {EXACT} else next(o for o in (ABSENT, LOSSY, TIED, EXACT) if o in orderings)
    tables = [p[1] for p in parts]
    if ordering != EXACT:
        tables = [t.drop_columns(["start_ns"]) if "start_ns" in t.column_names else t for t in tables]
    table = tables[0] if len(tables) == 1 else pa.concat_tables(tables).unify_dictionaries().combine_chunks()
    missing = table[H.DURATION].null_count
    table = table.set_column(table.column_names.index(H.DURATION), H.DURATION, pc.fill_null(table[H.DURATION], 0.0))
    if ordering == EXACT and table.num_rows > 1:
        bounds = pc.min_max(table["start_ns"])
        if bounds["min"].as_py() == bounds["max"].as_py():
            ordering = TIED
            table = table.drop_columns(["start_ns"])
    return RankTable(rank, header, table, missing, ordering)


def _read_file(path: Path, columns: set[str]) -> tuple[Header, pa.Table, str]:
    header, sample = _probe(path)
    wanted_start = H.START in columns and header.has(H.START)
    lossy = wanted_start and _start_is_lossy(header, sample)
    read_columns = columns - {H.START} if lossy else columns
    wanted = [c for c in header.canonical if c in (read_columns | set(H.REQUIRED))]
    types = {c: _TYPES[c] for c in wanted if c in _TYPES}
    try:
        table = _read(path, header, wanted, types)
    except pa.ArrowInvalid as exc:
        if H.START not in wanted or "decimal" not in str(exc).lower():
            raise BadInput(f"{path}: {_explain(str(exc), header)}", _FIX) from exc
        # start times with more than three decimals, or other odd cells: read them as text, parse exactly
        try:
            table = _read(path, header, wanted, {**types, H.START: pa.string()})
        except pa.ArrowInvalid as exc2:
            raise BadInput(f"{path}: {_explain(str(exc2), header)}", _FIX) from exc2
    if table.num_rows == 0:
        raise BadInput(f"{path} has a header but no kernel rows",
                       "profile a run that launches kernels (check the profiler's schedule and activities)")
    _check_durations(path, table[H.DURATION])
    ordering = LOSSY if lossy else (EXACT if H.START in wanted else ABSENT)
    return header, _clean(path, table), ordering


def _check_durations(path: Path, durations: pa.ChunkedArray) -> None:
    """A negative or non-finite Duration(us) is not a measurement; name the first such row (line 1 is the header)."""
    bad = pc.or_(pc.less(durations, 0.0), pc.invert(pc.is_finite(durations)))
    if not pc.any(bad).as_py():
        return
    index = pc.index(bad, True).as_py()
    value = durations[index].as_py()
    raise BadInput(f"{path}, line {index + 2}: Duration(us) is {value} (negative or not finite)",
                   "durations are elapsed microseconds, zero or more: re-export the file from the profiler")


def _read(path: Path, header: Header, wanted: list[str], types: dict[str, pa.DataType]) -> pa.Table:
    """The rows after the header, piece by piece on every core (a row never spans a line: cells hold no newline)."""
    options = {
        "read_options": pacsv.ReadOptions(column_names=_unique(header.canonical), use_threads=False),
        "parse_options": pacsv.ParseOptions(newlines_in_values=False),
        "convert_options": pacsv.ConvertOptions(include_columns=wanted, column_types=types, null_values=NULLS,
                                                strings_can_be_null=True, quoted_strings_can_be_null=True),
    }

    def piece(span: tuple[int, int]) -> pa.Table:
        with open(path, "rb") as fh:
            data = os.pread(fh.fileno(), span[1] - span[0], span[0])
        return pacsv.read_csv(pa.BufferReader(data), **options)

    parts = list(_workers().map(piece, _pieces(path)))
    if not parts:  # the header and nothing else: an empty table of the wanted columns
        return pa.table({c: pa.array([], types.get(c, pa.string())) for c in wanted})
    return pa.concat_tables(parts).unify_dictionaries().combine_chunks()


@functools.cache
def _workers() -> ThreadPoolExecutor:
    """One pool for the process, a worker more than the cores: each worker also reads its piece from the file, so one
    more keeps every core parsing (measured ~5% faster on 2 cores)."""
    return ThreadPoolExecutor(max_workers=min(8, pa.cpu_count() + 1), thread_name_prefix="sdcompile-csv")


def _pieces(path: Path) -> list[tuple[int, int]]:
    """(start, end) byte spans of about _PIECE bytes each, every one ending at a line end, after the header line."""
    size = path.stat().st_size
    spans = []
    with open(path, "rb") as fh:
        fh.readline()
        start = fh.tell()
        while start < size:
            fh.seek(start + _PIECE)
            fh.readline()
            end = min(fh.tell(), size)
            spans.append((start, end))
            start = end
    return spans


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


def _clean(path: Path, table: pa.Table) -> pa.Table:
    cols = {}
    for name in table.column_names:
        col = table[name]
        if name in (H.NAME, H.TYPE, H.CORE, H.DEVICE):
            # a Type of "N/A" (even quoted/tabbed) is missing: derive it from Name later; a missing Name is ""
            col = recoded(col, _trimmed_name if name == H.NAME else _trimmed_or_null)
        if name == H.NAME and col.null_count:  # rows without a name (rare): "" like an empty one
            col = pc.dictionary_encode(pc.fill_null(col.cast(pa.string()), ""))
        cols[name] = col
    if H.START in cols:
        cols["start_ns"] = exact_start_ns(cols.pop(H.START), path)
    return pa.table(cols)


def _trimmed_name(values: pa.Array) -> pa.Array:
    return pc.fill_null(pc.utf8_trim(values, characters='\t "'), "")


def _trimmed_or_null(values: pa.Array) -> pa.Array:
    trimmed = pc.utf8_trim(values, characters='\t "')
    return pc.if_else(pc.is_in(trimmed, pa.array(NULLS)), pa.scalar(None, pa.string()), trimmed)


def recoded(column: pa.ChunkedArray, change: Callable[[pa.Array], pa.Array]) -> pa.ChunkedArray:
    """A dictionary column (every text column is read as one) with `change` applied to its distinct values: values
    it makes equal become one, a value it makes null makes its rows null."""
    chunks = []
    for chunk in column.chunks:
        values = pc.dictionary_encode(change(chunk.dictionary))
        if not isinstance(values, pa.DictionaryArray):
            values = values.combine_chunks()
        chunks.append(pa.DictionaryArray.from_arrays(pc.take(values.indices, chunk.indices), values.dictionary))
    return pa.chunked_array(chunks, column.type)


def per_row(column: pa.ChunkedArray, value_of: Callable[[pa.Array], pa.Array]) -> pa.ChunkedArray:
    """`value_of` (an elementwise function of a text array) for every row of a dictionary column, computed once per
    distinct value."""
    chunks = column.chunks or [pa.DictionaryArray.from_arrays(pa.array([], pa.int32()), pa.array([], pa.string()))]
    return pa.chunked_array([pc.take(value_of(chunk.dictionary), chunk.indices) for chunk in chunks])


def _unscaled(column: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | None:
    """A decimal128 column of scale 3 as int64 nanoseconds, read straight from its values: the unscaled integer of
    microseconds to three decimals is the nanosecond count, the low word of each 16-byte little-endian value. None
    when a value needs the high word (beyond int64). A tenth of the time pyarrow's multiply-and-cast takes."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    out = []
    for chunk in chunks:
        validity, data = chunk.buffers()
        words = np.frombuffer(data, dtype=np.int64)[2 * chunk.offset: 2 * (chunk.offset + len(chunk))]
        low, high = words[0::2], words[1::2]
        if not np.array_equal(high, low >> 63):
            return None
        values = pa.array(np.ascontiguousarray(low), pa.int64())
        out.append(values if chunk.null_count == 0 else pc.if_else(chunk.is_valid(), values, None))
    return pa.chunked_array(out, pa.int64())


def exact_start_ns(column: pa.ChunkedArray | pa.Array, path: Path | str = "") -> pa.ChunkedArray:
    """`Start Time(us)` (epoch microseconds: decimals, or strings with a trailing TAB, maybe quoted) as exact int64
    nanoseconds."""
    try:
        if pa.types.is_decimal(column.type):
            nanoseconds = _unscaled(column) if column.type == _START_DECIMAL else None
            if nanoseconds is not None:
                return nanoseconds
            return pc.cast(pc.multiply(column, pa.scalar(Decimal(1000), pa.decimal128(5, 0))), pa.int64())
        text = pc.utf8_trim(column, characters='\t "\r')
        text = pc.if_else(pc.is_in(text, pa.array(NULLS)), pa.scalar(None, pa.string()), text)
        # Fast path, what the profiler writes: exactly three decimals (ns), so dropping the point gives the ns.
        dot = pc.find_substring(text, ".")
        if pc.all(pc.equal(dot, pc.subtract(pc.utf8_length(text), 4))).as_py() is not False:
            return pc.cast(pc.replace_substring(text, ".", ""), pa.int64())
        micro = pc.cast(text, pa.decimal128(38, 9))
        micro = pc.cast(pc.round(micro, 3), pa.decimal128(30, 3))  # sub-ns digits, if any, rounded to the ns
        return pc.cast(pc.multiply(micro, pa.scalar(Decimal(1000), pa.decimal128(5, 0))), pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:  # not a number, or beyond int64 nanoseconds
        raise BadInput(f"{path}: a Start Time(us) cell is not a number of microseconds since the epoch "
                       f"({str(exc).splitlines()[0][:200]})", _FIX) from exc
