"""What scaffold measured about a group's sites, as register uses it: the enabled groups that take part of them
when run first (its reuse check's production run, scaffold.json `shadowing_groups`). A specific group goes before
the generic groups that also match its sites; `register` places it so, `register --check` reports an order that
lets a generic group take them."""

from __future__ import annotations

from sdcompile.core.target.naming import RegistrationNames
from sdcompile.core.target.registry import TargetRegistry
from sdcompile.phases.register import carrier
from sdcompile.phases.register.results import MeasuredPlacement
from sdcompile.workspace.artifacts import ArtifactError, read_artifact
from sdcompile.workspace.store import Workspace


def placement(registry: TargetRegistry, names: RegistrationNames, model: str, op: str,
              workdir) -> tuple[int | None, MeasuredPlacement | None]:
    """Where the group goes: before the earliest registered group that still takes part of its sites with it
    registered after them (specific before generic, measured on the model's graph by scaffold), with the measured
    placement; (None, None) to append. The measurement is the pair's scaffold record, else any written record of the
    workspace that generated this group (a --model-file run records under the file's name)."""
    measured = shadowing(workdir, model, op).get(names.group)
    if measured is None:
        return None, None
    where, takers = measured
    index, flag = carrier.measured_index(registry, takers)
    if index is None:
        return None, None
    return index, MeasuredPlacement(flag, index + 1, tuple(takers), where)


def shadowing(workdir, model: str | None = None, op: str | None = None) -> dict:
    """group -> (its scaffold record, the enabled groups that take part of its sites when it is registered after
    them), over the workspace's written scaffold records; the pair (model, op)'s own record wins for its group."""

    ws, found = Workspace(workdir), {}
    pairs = [(p.model, p.op) for p in ws.pairs()]
    if model and op:
        pairs.append((model, op))  # last: its record replaces another pair's for the same group
    for pair_model, pair_op in pairs:
        path = ws.pair_dir(pair_model, pair_op, create=False) / "scaffold" / "scaffold.json"
        try:
            doc = read_artifact("scaffold", path) if path.is_file() else None
        except ArtifactError:
            continue
        if doc and doc.get("written") and doc.get("names", {}).get("group"):
            found[doc["names"]["group"]] = (ws.relative(path), tuple(doc.get("shadowing_groups", ())))
    return {group: value for group, value in found.items() if value[1]}
