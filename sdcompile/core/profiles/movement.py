"""The data a kernel launch moves, estimated from its row's `Input Shapes` and `Input Data Types`: the bytes of its
inputs read plus one output the size of its largest input written. Exact for the elementwise, copy, cast and fused
kernels a fusion adds or removes (their output is an input's size); a rough figure for a matmul, which the benefit
step only ever compares with itself. On a CPU capture, where durations are CPU times, this is what a fusion's gain
or loss is weighed by."""

from __future__ import annotations

import math
import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sdcompile.catalogs import load
from sdcompile.core.profiles import headers as H

UNKNOWN = math.nan  # a launch whose shapes or dtypes the row does not give
_DIMS = re.compile(r"\d+")


def _dtype_bytes() -> dict[str, int]:
    return {k.upper(): int(v) for k, v in load("kernel_headers")["dtype_bytes"].items()}


def cell_bytes(shapes: str | None, dtypes: str | None, sizes: dict[str, int] | None = None) -> float:
    """Bytes moved by one launch with these `Input Shapes` / `Input Data Types` cells (UNKNOWN when either is absent
    or no dtype is in the catalog). Tokens that name no tensor dtype (SCALAR) are dropped; when the two lists still
    differ in length, every input is taken at the first dtype's size: the tensor a kernel is about comes first."""
    sizes = sizes if sizes is not None else _dtype_bytes()
    if not shapes or not dtypes:
        return UNKNOWN
    shape_list = [s for s in shapes.strip().strip('"').split(";") if s.strip('" ')]
    # tokens that are no tensor dtype (SCALAR: a Python number argument) have no shape in the list either
    names = [n for n in (d.strip().upper().removeprefix("DT_") for d in dtypes.split(";")) if n in sizes]
    if not shape_list or not names:
        return UNKNOWN
    widths = [sizes[n] for n in names] if len(names) == len(shape_list) else [sizes[names[0]]] * len(shape_list)
    dims = [_DIMS.findall(s) for s in shape_list]
    if any(len(d) > 18 for shape in dims for d in shape):  # a cell no profiler writes (a dim past int64): no size
        return UNKNOWN
    moved = [math.prod(int(d) for d in shape) * w for shape, w in zip(dims, widths, strict=True)]
    try:
        return float(sum(moved) + max(moved))
    except OverflowError:  # dims whose product is past a float's range
        return UNKNOWN


def row_bytes(table: pa.Table) -> np.ndarray:
    """Estimated bytes per row of a rank's table (UNKNOWN where the row's cells do not give them), computed once per
    distinct (shapes, dtypes) pair."""
    n = table.num_rows
    if H.INPUT_SHAPES not in table.column_names or H.INPUT_DTYPES not in table.column_names:
        return np.full(n, UNKNOWN)
    text = [pc.fill_null(table[c].cast(pa.string()), "") for c in (H.INPUT_SHAPES, H.INPUT_DTYPES)]
    key = pc.dictionary_encode(pc.binary_join_element_wise(text[0], text[1], "\x1f")).combine_chunks()
    sizes = _dtype_bytes()
    values = np.array([cell_bytes(*k.split("\x1f"), sizes) for k in key.dictionary.to_pylist()] or [UNKNOWN])
    return values[key.indices.to_numpy()]
