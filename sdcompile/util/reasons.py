"""A decision's why as data: a code and the facts a renderer words. Decisions compare and group reasons by code and
facts, never by words; only a phase's render*.py turns a Reason into a sentence (`worded`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sdcompile.util.serialize import to_jsonable


@dataclass(frozen=True)
class Reason:
    code: str  # a phase's reason code (a StrEnum member; its value after a JSON round trip)
    facts: dict[str, Any] = field(default_factory=dict)  # JSON values, or nested Reasons

    @classmethod
    def of(cls, code: str, **facts: Any) -> Reason:
        return cls(code, facts)

    @classmethod
    def read(cls, value: Reason | Mapping[str, Any]) -> Reason:
        """A Reason, or one as JSON holds it (a fact of a resumed result: {"code", "facts"})."""
        return value if isinstance(value, Reason) else cls(value["code"], dict(value.get("facts", {})))

    # facts are a dict: a reason is what JSON holds of it, so one made here and one read back group together
    def _key(self) -> tuple[str, str]:
        return str(self.code), json.dumps(to_jsonable(self.facts), sort_keys=True)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Reason) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


Words = Mapping[str, Callable[..., str]]


def worded(reason: Reason | Mapping[str, Any] | None, words: Words) -> str:
    """`reason` in words: `words[code](**facts)`; None is "". A lower layer's own sentence (an exception's
    message) is a fact of a code whose words show it."""
    if reason is None:
        return ""
    r = Reason.read(reason)
    return words[str(r.code)](**r.facts)
