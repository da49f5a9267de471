"""`sdcompile explain TOPIC [ITEM]`: reference text kept as data (catalogs/topics.toml), never printed by code.

    explain()                      the topics
    explain("mismatch")            the seven mismatch types, one line each
    explain("mismatch", "3")       one type: explanation, evidence, fix, the causes debug recognises
    explain("graph-comparison")    a guide from docs/
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import PurePosixPath

from sdcompile.util.errors import BadInput, EnvironmentMissing

DOCS_PACKAGE = "sdcompile.docs"  # docs/ shipped as package data (pyproject.toml), so installed copies have the guides


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
    path: str  # "A" (edit the pattern) or "B" (custom graph pass)
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


def _topics() -> dict:
    from sdcompile.catalogs import load

    return load("topics")["topic"]


def _mismatch_texts() -> tuple[MismatchText, ...]:
    from sdcompile.core.graph.mismatch import catalog
    from sdcompile.core.torchcompat.behaviours import torch_range

    return tuple(
        MismatchText(t.number, t.name, t.path, t.summary, t.explanation, t.evidence, t.fix, t.example,
                     tuple(CauseText(c.key, c.when, c.fix, torch_range(c.behaviour) if c.behaviour else None,
                                     c.fix_otherwise) for c in t.causes))
        for t in catalog()
    )


def explain(topic: str | None = None, item: str | None = None) -> TopicList | MismatchExplanation | GuideText:
    topics = _topics()
    if topic is None:
        entries = []
        for name, entry in topics.items():
            items = tuple(str(t.number) for t in _mismatch_texts()) if entry.get("catalog") == "mismatches" else ()
            entries.append(TopicEntry(name, entry["title"], items))
        return TopicList("topics", tuple(entries))
    key = topic.strip().lower()
    if key not in topics:
        raise BadInput(f"no topic {topic!r}", f"topics: {', '.join(topics)} (`sdcompile explain` lists them)")
    entry = topics[key]
    if entry.get("catalog") == "mismatches":
        texts = _mismatch_texts()
        if item is None:
            return MismatchExplanation("mismatch-list", texts, entry.get("doc"))
        chosen = [t for t in texts if str(t.number) == str(item).strip()]
        if not chosen:
            raise BadInput(f"no mismatch type {item!r}", f"the types are {', '.join(str(t.number) for t in texts)}")
        return MismatchExplanation("mismatch", tuple(chosen), entry.get("doc"))
    if item is not None:
        raise BadInput(f"topic {key!r} has no items", f"run `sdcompile explain {key}`")
    return GuideText("guide", key, entry["title"], entry["doc"], guide_text(entry["doc"]))


def guide_text(doc: str) -> str:
    """A guide's Markdown from the installed package; `doc` is its path in the source tree (`docs/<name>.md`)."""
    name = PurePosixPath(doc).name
    try:
        return resources.files(DOCS_PACKAGE).joinpath(name).read_text(encoding="utf-8")
    except (FileNotFoundError, ModuleNotFoundError) as exc:
        raise EnvironmentMissing(f"the guide {doc} is not in this sdcompile installation ({exc})",
                                 "reinstall sdcompile (pip install -e . in a checkout)") from exc
