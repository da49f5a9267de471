"""Results as JSON: the one serialisation every artifact and `--json` use (dataclasses, paths, enums, sets)."""

from __future__ import annotations

import dataclasses
import enum
import json
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any


def to_jsonable(obj: Any) -> Any:
    """Dataclasses, paths, enums, tuples and sets as plain JSON values."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        items = sorted(obj, key=str) if isinstance(obj, (set, frozenset)) else obj
        return [to_jsonable(v) for v in items]
    if isinstance(obj, PurePath):
        return str(obj)
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, float) and (obj != obj or obj in (float("inf"), float("-inf"))):
        return str(obj)
    return obj


def dumps(result: Any) -> str:
    return json.dumps(to_jsonable(result), indent=2, ensure_ascii=False)
