"""The reuse check: the target's own pattern groups run on copies of the graph the pattern pass sees, and what
each replaced at each site.

Every run builds a fresh instance of the target's own `PatternMatchPass` (so registration goes through
upstream's `register_pattern` -> `register_replacement(..., fwd_only ...)` on the installed torch, and
matching runs upstream's loop to a fixpoint), registers the chosen groups in order, and applies it to a
private copy of the captured before-freezing graph. Runs never touch the module-level pass the backend uses,
so they are independent of each other and cost a registration and a match, not a compile:

    production   every group the target enables by default, in pattern_registry order: what compiling the
                 model with the target as it ships does at these sites
    per group    each loaded group on its own: which groups could serve the sites (a group an earlier one
                 pre-empts in production still shows here)
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sdcompile.core.graph.nodes import graph_copy
from sdcompile.phases.scaffold.results import SiteCoverage
from sdcompile.phases.scaffold.sites import SiteGraph


@dataclass(frozen=True)
class Replacement:
    """One replacement a run applied."""

    group: str
    pattern: str  # PatternBase.name()
    anchor: str  # the matched node the replacement anchored on
    nodes: tuple[str, ...]  # every node of the match (replaced by the group's replacement)


@dataclass(frozen=True)
class GroupRun:
    label: str  # "production" or the group's name
    groups: tuple[str, ...]
    replacements: tuple[Replacement, ...]
    removed: frozenset[str]  # node names gone from the graph after the run
    errors: tuple[str, ...]  # registration or matching failures, one line each

    def taken(self, site: SiteGraph) -> tuple[set[str], list[Replacement]]:
        """The site's nodes this run replaced, and the replacements that did it."""
        names = site.node_names
        by = [r for r in self.replacements if names & set(r.nodes)]
        return (names & (self.removed | {n for r in by for n in r.nodes})), by


def target_module(name: str):
    """A module of the loaded target (`passes.pattern_match_pass`): imported by `load_target` already."""
    from sdcompile.core.target.package_import import PACKAGE

    return sys.modules[f"{PACKAGE}.compilation.{name}"]


class RegisteredGroups:
    """Pattern groups registered, in order, in a fresh instance of the target's own PatternMatchPass, with every
    replacement it applies recorded. Registration (the expensive part) happens once; `apply` runs on copies."""

    def __init__(self, groups: Iterable[tuple[str, Any]], tree_root=None, _register: bool = True):
        """`groups`: (name, its pattern classes, or a GraphPatternEntry carrier's registration function)."""
        from sdcompile.core.target.failures import describe_error

        self.groups = [g for g, _ in groups] if _register else []
        self.tree_root = tree_root
        self.pass_ = target_module("passes.pattern_match_pass").PatternMatchPass()
        self.errors: list[str] = []
        self._sink: list[list[Replacement]] = [[]]  # where the entries' observers append (see merged())
        self._parts: list[RegisteredGroups] = []
        if not _register:
            return
        for group, classes in groups:
            if callable(classes):  # a GraphPatternEntry carrier's registration function
                self._register_entries(group, classes)
                continue
            for cls in classes:
                try:
                    name = cls.name()
                except Exception as exc:  # noqa: BLE001 - a broken pattern class is the group's failure, reported
                    self.errors.append(f"{group}: name() raised {describe_error(exc, tree_root)}")
                    continue
                seen = {id(e) for entries in self.pass_.pattern_pass.patterns.values() for e in entries}
                try:
                    self.pass_.register_pattern(name, cls.pattern, cls.replacement, cls.inputs())
                except Exception as exc:  # noqa: BLE001 - upstream raises for duplicates and broken patterns
                    self.errors.append(f"{group}: registering {name} failed: {describe_error(exc, tree_root)}")
                    continue
                for entries in self.pass_.pattern_pass.patterns.values():
                    for entry in entries:
                        if id(entry) not in seen:
                            _observe(entry, group, name, self._sink)

    def _register_entries(self, group: str, function) -> None:
        """A carrier registers its entries itself; each is known by its handler's name."""
        from sdcompile.core.target.failures import describe_error

        seen = {id(e) for entries in self.pass_.pattern_pass.patterns.values() for e in entries}
        try:
            function(self.pass_.pattern_pass)
        except Exception as exc:  # noqa: BLE001 - a broken carrier is the group's failure, reported
            self.errors.append(f"{group}: registering its entries failed: {describe_error(exc, self.tree_root)}")
            return
        for entries in self.pass_.pattern_pass.patterns.values():
            for entry in entries:
                if id(entry) not in seen:
                    name = getattr(getattr(entry, "handler", None), "__name__", group)
                    _observe(entry, group, name, self._sink)

    @classmethod
    def merged(cls, parts: Sequence[RegisteredGroups]) -> RegisteredGroups:
        """One pass holding the parts' registered patterns in the parts' order: what registering all their groups
        one after another gives (registration appends each pattern to the entries of its anchor op)."""
        whole = cls((), parts[0].tree_root if parts else None, _register=False)
        whole._parts = list(parts)
        for part in parts:
            whole.groups.extend(part.groups)
            whole.errors.extend(part.errors)
            for key, entries in part.pass_.pattern_pass.patterns.items():
                whole.pass_.pattern_pass.patterns[key].extend(entries)
        return whole

    def _holders(self) -> list[RegisteredGroups]:
        """This one and every part it was merged from, at any depth: where its entries' observers append."""
        return [self, *(h for part in self._parts for h in part._holders())]

    def apply(self, stage_gm, label: str) -> GroupRun:
        """Run the pass (upstream's loop, to a fixpoint) on a copy of `stage_gm`."""
        return self.applied(stage_gm, label)[1]

    def applied(self, stage_gm, label: str):
        """(the copy of `stage_gm` the pass ran on, the run): the graph as these groups leave it."""
        from sdcompile.core.target.failures import describe_error

        record: list[Replacement] = []
        for holder in self._holders():
            holder._sink[0] = record
        gm = graph_copy(stage_gm)
        before = {n.name for n in gm.graph.nodes}
        errors = list(self.errors)
        try:
            self.pass_(gm)
        except Exception as exc:  # noqa: BLE001 - a pattern can raise inside the matcher: reported for this run
            errors.append(f"matching raised {describe_error(exc, self.tree_root)}")
        after = {n.name for n in gm.graph.nodes}
        return gm, GroupRun(label, tuple(self.groups), tuple(record), frozenset(before - after), tuple(errors))


def _observe(entry, group: str, pattern: str, sink: list[list[Replacement]]) -> None:
    original = entry.apply

    def apply(match, graph, node, *args, **kwargs):
        nodes = tuple(n.name for n in getattr(match, "nodes", ()) if hasattr(n, "name"))
        sink[0].append(Replacement(group, pattern, getattr(node, "name", str(node)), nodes))
        return original(match, graph, node, *args, **kwargs)

    entry.apply = apply


def run_groups(stage_gm, groups: Iterable[tuple[str, Sequence[Any]]], label: str, tree_root=None) -> GroupRun:
    """Register `groups` ((name, pattern classes), in order) in a fresh target PatternMatchPass and apply it to a
    copy of `stage_gm`."""
    return RegisteredGroups(list(groups), tree_root).apply(stage_gm, label)


def coverage(run: GroupRun, site: SiteGraph, key_ops: Sequence[str] = ()) -> SiteCoverage:
    """What `run` did at `site`. With `key_ops` (the recipe's chain ops), a site counts as replaced when those
    are all gone, even if casts or views around them stay."""
    from collections import Counter

    from sdcompile.core.graph.nodes import op_name

    if site.problem and not site.before:
        return SiteCoverage(site.path, site.implementation, "not in the graph", 0, 0, (), ())
    if site.fused_ops:
        return SiteCoverage(site.path, site.implementation, "fused by the model", len(site.before), 0, (),
                            tuple(site.fused_ops))
    taken, by = run.taken(site)
    left_nodes = [n for n in site.before if n.name not in taken]
    left_counts = Counter(op_name(n) for n in left_nodes)
    left = tuple(f"{op} x{k}" if k > 1 else op for op, k in sorted(left_counts.items()))
    keys_gone = bool(key_ops) and all(op not in left_counts for op in key_ops if
                                     any(op_name(n) == op for n in site.before))
    if taken and (not left_nodes or keys_gone):
        status = "replaced"
    elif taken:
        status = "partly replaced"
    else:
        status = "not replaced"
    labels = tuple(dict.fromkeys(f"{r.group}: {r.pattern}" for r in by))
    groups = tuple(dict.fromkeys(r.group for r in by))
    return SiteCoverage(site.path, site.implementation, status, len(site.before), len(taken), labels, left, groups)


def production_groups(target) -> list[str]:
    """The groups compiling with the target as it ships registers: pattern_registry order, flag on by default."""
    loaded = {g.group for g in target.groups if g.loaded}
    return [g.group for g in sorted(target.registry.groups, key=lambda g: g.position)
            if g.flag_default is True and g.group in loaded]
