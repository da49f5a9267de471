"""`sdcompile explain TOPIC [ITEM]`: reference text kept as data (catalogs/topics.toml), never printed by code.

    explain()                      the topics
    explain("mismatch")            the seven mismatch types, one line each
    explain("mismatch", "3")       one type: explanation, evidence, fix, the causes debug recognises
    explain("graph-comparison")    a guide from docs/
"""

from __future__ import annotations

from importlib import resources
from pathlib import PurePosixPath

from sdcompile.catalogs import load
from sdcompile.core.graph.mismatch import catalog
from sdcompile.core.torchcompat.behaviours import torch_range
from sdcompile.phases.explain.results import (
    CauseText,
    GuideText,
    MismatchExplanation,
    MismatchText,
    TopicEntry,
    TopicList,
)
from sdcompile.util.errors import BadInput, EnvironmentMissing

DOCS_PACKAGE = "sdcompile.docs"  # docs/ shipped as package data (pyproject.toml), so installed copies have the guides


def _topics() -> dict:
    return load("topics")["topic"]


def _mismatch_texts() -> tuple[MismatchText, ...]:
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
        from sdcompile.util.choices import UnknownChoice

        raise UnknownChoice("topic", topic, topics, message=f"no topic {topic!r}",
                            hint=" (`sdcompile explain` lists them)")
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
