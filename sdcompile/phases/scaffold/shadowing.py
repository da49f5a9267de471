"""Which enabled groups would take a generated group's sites if it were registered after them: measured, not
guessed.

The production groups (every group the target enables by default, in pattern_registry order) are registered
first and the generated group last, in one fresh instance of the target's own PatternMatchPass, and the pass runs
on a copy of each site's before-freezing graph. A production group that still replaces a node of a generated
site there is one the new group must precede (the maintainers' rule: specific groups before the generic ones that
also match their sites; MindIE-SD 3.1.0's `x + y * gate` takes a RoPE chain's add(mul, mul)). Where the new
group takes its sites even registered last (its anchor is a later node than the generic group's), the order does
not matter and nothing is reported. `register` places the group before the earliest of them.
"""

from __future__ import annotations

from sdcompile.core.target.group_runner import GroupRunner


def shadowing_groups(production, group: str, classes, variants, tree_root) -> tuple[str, ...]:
    """`production`: the survey's group_runner.GroupRunner of the production groups (None: no reuse check ran)."""

    if production is None or not classes:
        return ()
    last = GroupRunner.merged([production, GroupRunner(tree_root, [(group, classes)])])
    runs: dict[int, object] = {}
    found: list[str] = []
    for v in variants:
        for _dt, site, _chain in v.members:
            stage = site.before_stage
            if stage is None:
                continue
            if id(stage) not in runs:
                runs[id(stage)] = last.apply(stage.gm, "production, the generated group last")
            _taken, by = runs[id(stage)].taken(site.node_names)
            found += [r.group for r in by if r.group != group]
    return tuple(dict.fromkeys(found))
