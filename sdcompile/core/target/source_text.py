"""The text of a Python source file in the tree, decoded as Python decodes it: a UTF-8 BOM or a coding cookie
decide the encoding, UTF-8 otherwise. A file Python could not read either is bad input naming the file."""

from __future__ import annotations

import io
import tokenize
from pathlib import Path

from sdcompile.util.errors import BadInput

FIX = "save it as UTF-8, or declare its encoding in a coding cookie on line 1 or 2 (# -*- coding: latin-1 -*-)"


def source_encoding(path: Path, data: bytes) -> str:
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:  # an unknown codec in the cookie, or a BOM contradicting the cookie
        raise BadInput(f"{path}: {exc.msg if hasattr(exc, 'msg') else exc}", FIX) from exc
    return encoding


def read_source(path: Path) -> str:
    data = path.read_bytes()
    encoding = source_encoding(path, data)
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise BadInput(f"{path} is not valid {encoding.removesuffix('-sig')}: byte 0x{data[exc.start]:02x} at offset "
                       f"{exc.start}", FIX) from exc
