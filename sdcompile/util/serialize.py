"""Results as JSON: the one serialisation every artifact and `--json` use (dataclasses, paths, enums, sets)."""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import functools
import json
import types
import typing
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

_PLAIN = frozenset({str, int, bool, type(None)})  # leaves JSON holds as they are


def to_jsonable(obj: Any) -> Any:
    """Dataclasses, paths, enums, tuples and sets as plain JSON values."""
    kind = type(obj)
    if kind in _PLAIN:  # most leaves: returned before any other test
        return obj
    if kind is float:
        return obj if obj - obj == 0 else str(obj)  # inf - inf and nan - nan are nan: written "inf", "nan"
    names = _field_names(kind)
    if names is not None:  # a profile report holds tens of thousands of rows: plain fields are not recursed into
        return {name: value if type(value) in _PLAIN else to_jsonable(value)
                for name in names for value in (getattr(obj, name),)}
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        items = sorted(obj, key=str) if isinstance(obj, (set, frozenset)) else obj
        return [to_jsonable(v) for v in items]
    if isinstance(obj, PurePath):
        return str(obj)
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, float) and obj - obj != 0:  # a float subclass
        return str(obj)
    return obj


@functools.cache
def _field_names(kind: type) -> tuple[str, ...] | None:
    """A dataclass's field names (None for any other type), looked up once per class: a profile report holds tens
    of thousands of small dataclasses."""
    if dataclasses.is_dataclass(kind):
        return tuple(f.name for f in dataclasses.fields(kind))
    return None


def dumps(result: Any) -> str:
    return json.dumps(to_jsonable(result), indent=2, ensure_ascii=False)


def from_jsonable(cls: Any, data: Any) -> Any:
    """The inverse of to_jsonable, driven by `cls`'s type hints: dataclasses (missing fields take their defaults),
    tuples, lists, sets, dicts (keys converted back from strings), paths, enums, floats written as "inf"/"nan",
    unions (the first member the data fits) and Optional. `from_jsonable(RunResult, json.loads(text))` reads a
    result printed with --json back into the dataclass."""
    return _convert(cls, data, strict=False)


def _convert(tp: Any, data: Any, strict: bool) -> Any:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any or tp is object or isinstance(tp, typing.TypeVar):
        return data
    if origin in (typing.Union, types.UnionType):
        return _union(args, data, strict)
    if origin is typing.Literal:
        if data not in args:
            raise ValueError(f"{data!r} is not one of {args}")
        return data
    if data is None:
        if tp is type(None):
            return None
        raise ValueError(f"null where {tp} was expected")
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return _dataclass(tp, data, strict)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_convert(args[0], v, strict) for v in data)
        return tuple(_convert(a, v, strict) for a, v in zip(args, data, strict=True)) if args else tuple(data)
    if origin in (list, set, frozenset, collections.abc.Sequence, collections.abc.Set):
        kind = {collections.abc.Sequence: tuple, collections.abc.Set: frozenset}.get(origin, origin)
        return kind(_convert(args[0], v, strict) for v in data) if args else kind(data)
    if origin in (dict, collections.abc.Mapping):
        key, value = args or (Any, Any)
        return {_key(key, k): _convert(value, v, strict) for k, v in data.items()}
    return _scalar(tp, data)


def _union(args: tuple, data: Any, strict: bool) -> Any:
    if data is None and type(None) in args:
        return None
    members = [a for a in args if a is not type(None)]
    for attempt in (True, False) if not strict else (True,):
        for member in members:
            try:
                return _convert(member, data, attempt)
            except (TypeError, ValueError, KeyError, AttributeError):
                continue
    raise ValueError(f"{data!r} fits none of {members}")


def _dataclass(cls: type, data: Any, strict: bool) -> Any:
    if not isinstance(data, Mapping):
        raise TypeError(f"{cls.__name__} from {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    if strict and set(data) - set(fields):
        raise KeyError(f"{cls.__name__} has no field {sorted(set(data) - set(fields))[0]}")
    values = {name: _convert(hints.get(name, Any), data[name], strict) for name in fields if name in data}
    missing = [n for n, f in fields.items() if n not in data and f.default is dataclasses.MISSING
               and f.default_factory is dataclasses.MISSING and f.init]
    if missing:
        raise KeyError(f"{cls.__name__} without {', '.join(missing)}")
    return cls(**{k: v for k, v in values.items() if fields[k].init})


def _key(tp: Any, key: str) -> Any:
    return _scalar(tp, int(key) if tp is int else key) if tp is not Any else key


def _scalar(tp: Any, data: Any) -> Any:
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return tp(data)
    if isinstance(tp, type) and issubclass(tp, PurePath):
        return tp(data)
    if tp is float:
        if isinstance(data, bool) or not isinstance(data, (int, float, str)):
            raise TypeError(f"float from {data!r}")
        return float(data)
    if tp in (int, str, bool):
        if not isinstance(data, tp) or (tp is int and isinstance(data, bool)):
            raise TypeError(f"{tp.__name__} from {data!r}")
        return data
    return data
