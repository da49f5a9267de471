"""What `sdcompile explain` returns: the topic list, mismatch types or a guide's text."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TopicEntry:
    topic: str
    title: str
    items: tuple[str, ...]  # what ITEM can be ("1".."7"), empty for a guide


@dataclass(frozen=True)
class TopicList:
    kind: str  # "topics"
    topics: tuple[TopicEntry, ...]


@dataclass(frozen=True)
class CauseText:
    key: str
    when: str
    fix: str
    torch_range: str | None = None  # where `fix` holds ("torch >=2.12"); `fix_otherwise` holds elsewhere
    fix_otherwise: str | None = None


@dataclass(frozen=True)
class MismatchText:
    number: int
    name: str
    path: str  # "A" (edit the pattern) or "B" (another carrier: a weight as a pattern input, a GraphPatternEntry)
    summary: str
    explanation: str
    evidence: str
    fix: str
    example: str
    causes: tuple[CauseText, ...]


@dataclass(frozen=True)
class MismatchExplanation:
    kind: str  # "mismatch" (one type) or "mismatch-list" (all of them)
    types: tuple[MismatchText, ...]
    doc: str | None  # where the same text lives in docs/


@dataclass(frozen=True)
class GuideText:
    kind: str  # "guide"
    topic: str
    title: str
    path: str
    markdown: str
