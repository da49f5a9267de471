"""Graph breaks in words, for analyze and debug: how many, why dynamo broke, at which line of the model."""

from __future__ import annotations

from collections.abc import Sequence

from sdcompile.core.graph.graph_breaks import GraphBreak

_MAX_CODE = 80


def breaks_headline(graphs: int, untraced: bool) -> str:
    if graphs <= 1 and not untraced:
        return "no graph break: the model is one graph, so a pattern can match anywhere in it"
    eager = ", and code dynamo gave up on runs eagerly" if untraced else ""
    return (f"the forward is {graphs} graph(s){eager}: a pattern never matches across two graphs or in eager code, "
            "so a chain split that way is not replaced")


def graph_break_lines(places: Sequence[GraphBreak], untraced: Sequence[str]) -> list[str]:
    """One line per place dynamo broke a graph, then one for the code it gave up tracing without naming a break."""
    lines = [f"break: {break_line(place)}" for place in places]
    if untraced:
        lines.append(f"not traced (run eagerly, what it calls compiled as graphs of their own): {'; '.join(untraced)}")
    return lines


def break_line(place: GraphBreak) -> str:
    """`2x <reason> at <file>:<line> `<code>``, one break place."""
    times = f"{place.count}x " if place.count > 1 else ""
    where = f" at {place.file}:{place.line}" if place.file else ""
    code = place.code if len(place.code) <= _MAX_CODE else place.code[:_MAX_CODE - 1] + "…"
    return f"{times}{place.reason}{where}" + (f" `{code}`" if code else "")
