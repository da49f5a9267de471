"""Check a parsed catalog against its declared schema (catalogs/schemas.py); a violation names file, table and field."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from sdcompile.catalogs.schemas import Each, Rows, Table
from sdcompile.util.errors import BadInput

# type name -> (what a message calls it, the check); bool is not an integer here, though Python says it is
TYPES: dict[str, tuple[str, Any]] = {
    "string": ("a string", lambda v: isinstance(v, str)),
    "integer": ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    "number": ("a number", lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)),
    "boolean": ("a boolean", lambda v: isinstance(v, bool)),
    "array": ("an array", lambda v: isinstance(v, list)),
    "table": ("a table", lambda v: isinstance(v, dict)),
}
_INDEX = re.compile(r"\[\d+\]")  # a row index in a path: `type[0].cause` is written [[type.cause]]
_LABEL_KEYS = ("name", "key", "id")  # a row's own name, shown beside its index when it has one


class CatalogError(BadInput):
    """A catalog file does not hold what sdcompile reads from it (exit 2)."""


def check(data: Mapping[str, Any], schema: Mapping[str, Any], source: str, fix: str) -> None:
    """Raise CatalogError (`<source>: op[3] has no "name" (a string)`) for the first field `schema` wants that
    `data` lacks or holds with another type."""
    _fields(data, schema, "", _Where(source, fix))


class _Where:
    def __init__(self, source: str, fix: str):
        self.source, self.fix = source, fix

    def fail(self, path: str, text: str) -> None:
        prefix = f"{self.source}: {path}" if path else self.source
        raise CatalogError(f"{prefix} {text}", self.fix)


def _describe(spec: Any) -> str:
    if isinstance(spec, Rows):
        return "an array of tables"
    if isinstance(spec, Table):
        return "a table"
    return TYPES[spec.rstrip("?")][0]


def _optional(spec: Any) -> bool:
    return spec.optional if isinstance(spec, Table) else spec.endswith("?")


def _kind_of(value: Any) -> str:
    for name in ("boolean", "integer", "number", "string", "array", "table"):
        if TYPES[name][1](value):
            return TYPES[name][0]
    return f"a {type(value).__name__}"


def _fields(data: Mapping[str, Any], schema: Mapping[str, Any], path: str, where: _Where, label: str = "") -> None:
    """Check the table at `path` ("" for the file's top level); `label` names it in messages (a row's name)."""
    for field, spec in schema.items():
        if field not in data:
            if not _optional(spec):
                where.fail(path + label, f'has no "{field}" ({_describe(spec)})')
            continue
        _value(data[field], spec, path, field, where, label)


def _value(value: Any, spec: Any, parent: str, field: str, where: _Where, label: str = "") -> None:
    """Check `value`, the field `field` of the table at `parent` (shown as `parent` + `label`)."""
    path = f"{parent}.{field}" if parent else field
    if isinstance(spec, Rows):
        if not isinstance(value, list) or not all(isinstance(row, dict) for row in value):
            where.fail(path, f"is {_kind_of(value)}, not an array of tables ([[{_INDEX.sub('', path)}]])")
        for i, row in enumerate(value):
            _fields(row, spec.fields, f"{path}[{i}]", where, _label(row))
    elif isinstance(spec, Table):
        if not isinstance(value, dict):
            where.fail(path, f"is {_kind_of(value)}, not a table")
        if isinstance(spec, Each):
            for key, table in value.items():
                _value(table, Table(spec.fields), path, key, where)
        else:
            _fields(value, spec.fields, path, where)
    else:
        noun, ok = TYPES[spec.rstrip("?")]
        if not ok(value):
            where.fail(parent + label, f'has "{field}" = {_kind_of(value)}, where {noun} belongs')


def _label(row: Mapping[str, Any]) -> str:
    for key in _LABEL_KEYS:
        if isinstance(row.get(key), str):
            return f" ({row[key]})"
    return ""
