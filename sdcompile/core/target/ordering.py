"""Known ordering rules of pattern_registry (catalogs/registration.toml) and the entries that break them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from sdcompile.catalogs import load


@dataclass(frozen=True)
class OrderingRule:
    id: str
    first: tuple[str, ...]  # flag globs that must be registered earlier ...
    then: tuple[str, ...]  # ... than every flag matching these
    reason: str
    source: str  # where upstream records the lesson

    def must_precede(self, earlier: str, later: str) -> bool:
        """True when this rule requires flag `earlier` to be registered before flag `later`."""
        return (
            earlier != later
            and any(fnmatchcase(earlier, g) for g in self.first)
            and any(fnmatchcase(later, g) for g in self.then)
        )


@dataclass(frozen=True)
class OrderingViolation:
    rule: str
    must_come_first: str  # flag
    position: int  # its 1-based registry position
    registered_after: str  # flag it should precede
    after_position: int
    reason: str
    source: str


def ordering_rules() -> tuple[OrderingRule, ...]:
    return tuple(
        OrderingRule(r["id"], tuple(r["first"]), tuple(r["then"]), r["reason"], r.get("source", ""))
        for r in load("registration").get("ordering", [])
    )


def violations(flags_in_order: Sequence[str], involving: str | None = None) -> tuple[OrderingViolation, ...]:
    """Every pair (a, b) where a rule wants a before b but the registry has b first; only pairs with `involving`
    when given."""
    found = []
    position = {flag: i for i, flag in enumerate(flags_in_order, start=1)}
    for rule in ordering_rules():
        for earlier, p_earlier in position.items():
            for later, p_later in position.items():
                if p_earlier > p_later and rule.must_precede(earlier, later):
                    if involving is None or involving in (earlier, later):
                        found.append(
                            OrderingViolation(rule.id, earlier, p_earlier, later, p_later, rule.reason, rule.source)
                        )
    return tuple(sorted(found, key=lambda v: (v.position, v.after_position, v.rule)))
