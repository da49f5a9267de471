"""The ops sdcompile fuses, one catalog file each (catalogs/ops/<op>.toml): its names, what counts as it in a run
([primitive]), where debug looks for it in a graph ([anchors]), what a profile shows of it ([kernels]) and how
scaffold replaces its chains ([recipe.<form>]). The phase that needs a section types it (zoo.primitives,
graph.candidates, profiles.catalog, graph.pattern_recipes); this module is the one place an op is named and its
file read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sdcompile.catalogs import load

OPS = ("rmsnorm", "rope", "adaln", "gelu")  # every op, in the order reports list them (a test holds the files to it)


def op_table(op: str) -> Mapping[str, Any]:
    """Everything the catalog holds on `op` (a name of OPS), checked against its schema."""
    return load(f"ops/{op}")


def op_tables() -> dict[str, Mapping[str, Any]]:
    return {op: op_table(op) for op in OPS}


def op_title(op: str) -> str:
    return op_table(op)["title"]


def known_op(name: str | None) -> str | None:
    """The op `name` names, by its name, title or an alias (any case); None when it names none."""
    key = (name or "").strip().lower()
    if key in OPS:
        return key
    return next((op for op, t in op_tables().items()
                 if key in (a.lower() for a in (t["title"], *t.get("aliases", ())))), None)

