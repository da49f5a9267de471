"""Shards joined into one table (`sdcompile matrix merge`), and a table compared with an earlier one (`--compare`):
a cell the target covers less than before is a regression (results.COVERAGE: reused -> generated, generated ->
fails, ...)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from sdcompile.lifecycle.matrix.results import Cell, Change, MatrixReport, coverage
from sdcompile.util.errors import BadInput
from sdcompile.util.serialize import from_jsonable

_FIX = "pass files `sdcompile matrix --json` wrote"


def read_table(path: Path) -> MatrixReport:
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
        return from_jsonable(MatrixReport, doc)
    except OSError as exc:
        raise BadInput(f"{path} cannot be read ({exc.strerror or exc})", _FIX) from exc
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise BadInput(f"{path} is not a matrix table ({type(exc).__name__}: {exc})", _FIX) from exc


def merge(paths: list[Path], allow_mixed: bool = False) -> MatrixReport:
    """The shards' cells as one table. Shards made through other targets or by another sdcompile are refused unless
    `allow_mixed` (their cells would not measure the same thing); cells of several torches stay apart, one column
    each; the same cell in two shards is refused unless both say the same."""
    if not paths:
        raise BadInput("matrix merge needs the shard files", "e.g. sdcompile matrix merge shard-*.json")
    tables = [(p, read_table(p)) for p in paths]
    first_path, first = tables[0]
    for path, table in tables[1:]:
        for field in ("target", "sdcompile"):
            if getattr(table, field) != getattr(first, field) and not allow_mixed:
                raise BadInput(f"{path} was made with {field} {getattr(table, field)!r}, {first_path} with "
                               f"{getattr(first, field)!r}", "merge shards of one target and sdcompile, or pass "
                               "--allow-mixed to join them anyway")
    cells: dict[tuple[str, str, str], tuple[Path, Cell]] = {}
    for path, table in tables:
        for cell in table.cells:
            seen = cells.get(cell.key)
            if seen and (seen[1].outcome, seen[1].carrier) != (cell.outcome, cell.carrier):
                raise BadInput(f"{path} and {seen[0]} both hold {cell.model} × {cell.op} on torch {cell.torch}, "
                               f"with other outcomes ({seen[1].outcome} / {cell.outcome})",
                               "merge each shard once (--shard i/n gives each cell to one shard)")
            cells.setdefault(cell.key, (path, cell))
    models = tuple(dict.fromkeys(m for _p, t in tables for m in t.models))
    ops = tuple(dict.fromkeys(o for _p, t in tables for o in t.ops))
    order = {(m, o): i for i, (m, o) in enumerate((m, o) for m in models for o in ops)}
    ordered = sorted((c for _p, c in cells.values()), key=lambda c: (order.get((c.model, c.op), len(order)), c.torch))
    states = tuple(dict.fromkeys(s for _p, t in tables for s in t.torch_states))
    return replace(first, cells=tuple(ordered), models=models, ops=ops, shard="", torch_states=states,
                   merged_from=tuple(str(p) for p, _t in tables), changes=(), compared_with="")


def compare(new: MatrixReport, old_path: Path) -> MatrixReport:
    """`new` with the cells whose outcome differs from the table at `old_path`."""
    old = {c.key: c for c in read_table(old_path).cells}
    changes = []
    for cell in new.cells:
        before = old.pop(cell.key, None)
        if before is None or before.outcome != cell.outcome:
            changes.append(Change(cell.model, cell.op, cell.torch, before.outcome if before else "", cell.outcome,
                                  bool(before and coverage(cell.outcome) < coverage(before.outcome))))
    changes += [Change(c.model, c.op, c.torch, c.outcome, "", False) for c in old.values()]
    return replace(new, compared_with=str(old_path), changes=tuple(changes))

