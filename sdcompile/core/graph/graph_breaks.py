"""Where dynamo broke a model's forward into several graphs, read off each graph it hands the backend (no second
trace): a pattern never matches across a break, so a chain a break cuts stays as it is."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from sdcompile.core.torchcompat import dynamo
from sdcompile.util.source_paths import short_path

_MAX_REASON = 160


@dataclass(frozen=True)
class GraphBreak:
    reason: str  # dynamo's reason, its first line ("Unsupported Tensor.item() call with capture_scalar_outputs=False")
    file: str = ""  # where in the model's code dynamo stopped (short path; "" when it names no frame)
    line: int = 0
    code: str = ""  # that source line, stripped
    count: int = 1  # graphs that ended there for that reason


def ended_by(gm) -> GraphBreak | None:
    """The graph break that ended the dynamo graph `gm`; None for the graph that ends at the forward's return."""
    end = dynamo.graph_end(gm)
    if end is None or not end[1]:
        return None
    reason, _, stack = end
    frame = next((f for f in reversed(stack) if not short_path(f.filename).startswith("torch/")),
                 stack[-1] if stack else None)
    text = _reason_line(reason)
    if frame is None:
        return GraphBreak(text)
    return GraphBreak(text, short_path(frame.filename), frame.lineno or 0, (frame.line or "").strip())


def _reason_line(reason: str) -> str:
    """A reason as one line, its spaces collapsed: dynamo's reasons run to several lines with a hint."""
    return " ".join((reason.strip().splitlines() or [""])[0].split())[:_MAX_REASON]


def untraced_since(before: dict[str, int], named: tuple[GraphBreak, ...]) -> tuple[str, ...]:
    """Why dynamo gave up tracing code since the reading `before` (dynamo.untraced_counts()), the reasons no named
    break gives: code it ran eagerly, compiling the functions that code calls as graphs of their own."""
    after = dynamo.untraced_counts()
    said = {b.reason for b in named}
    grew = (_reason_line(reason) for reason, times in after.items() if times > before.get(reason, 0))
    # "SKIPPED INLINING <code object ...>": dynamo's own polyfill not inlined, the call kept as a call, not a reason
    return tuple(dict.fromkeys(r for r in grew if r not in said and not r.startswith("SKIPPED INLINING")))


def break_places(breaks: Iterable[GraphBreak | None]) -> tuple[GraphBreak, ...]:
    """Each distinct break (reason and place) once, counting the graphs that ended there, in the order met."""
    places: dict[tuple[str, str, int], GraphBreak] = {}
    for b in breaks:
        if b is None:
            continue
        key = (b.reason, b.file, b.line)
        places[key] = replace(places[key], count=places[key].count + b.count) if key in places else b
    return tuple(places.values())
