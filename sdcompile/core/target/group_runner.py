"""The one group runner: pattern groups registered once in a fresh instance of the target's own PatternMatchPass
(upstream's `register_pattern` -> `register_replacement(..., fwd_only ...)` on the installed torch, or a
GraphPatternEntry carrier's own registration function), then applied to copies of graphs with upstream's loop to a
fixpoint, every replacement recorded: which pattern of which group, at which node, from which model line.

    runner = GroupRunner(target.tree.root, [(name, target.registration_of(name))])
    run = runner.apply(stage.gm, name)                   # the graph is copied; run.graph is the copy after the pass
    both = GroupRunner.merged([first, second])           # one pass, the parts' patterns in the parts' order

scaffold's reuse check, debug and the survey of a model's groups apply groups through it and never touch the
module-level pass the backend uses, so runs are independent and cost a registration and a match, not a compile. A
compile session (the backend compiling for real) records its replacements with the same observer (`observe`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sdcompile.core.graph.nodes import graph_copy
from sdcompile.core.target.failures import describe_error
from sdcompile.core.target.loader import loaded_target
from sdcompile.core.target.replacements import Replacement, observe


@dataclass(frozen=True)
class GroupRun:
    """One application of registered groups to a copy of a graph."""

    label: str  # "production" or the group's name
    groups: tuple[str, ...]
    replacements: tuple[Replacement, ...]
    removed: frozenset[str]  # node names gone from the graph after the run
    errors: tuple[str, ...]  # registration or matching failures, one line each
    graph: Any = field(default=None, compare=False, repr=False)  # the copy as the pass left it (keep_graph=True)
    raised: BaseException | None = field(default=None, compare=False, repr=False)  # what matching raised

    def by_pattern(self) -> Counter:
        return Counter(r.pattern for r in self.replacements)

    def taken(self, names: set[str]) -> tuple[set[str], list[Replacement]]:
        """Of the node `names` (a site's), those this run replaced, and the replacements that did it."""
        by = [r for r in self.replacements if names & set(r.nodes)]
        return (names & (self.removed | {n for r in by for n in r.nodes})), by


def fresh_pattern_pass():
    """A new instance of the loaded target's own PatternMatchPass, nothing registered."""

    return loaded_target().module("passes.pattern_match_pass").PatternMatchPass()


def _entry_ids(pattern_pass) -> set[int]:
    return {id(e) for entries in pattern_pass.patterns.values() for e in entries}


def _new_entries(pattern_pass, seen: set[int]) -> list:
    return [e for entries in pattern_pass.patterns.values() for e in entries if id(e) not in seen]


class GroupRunner:
    """Pattern groups registered, in order, in a fresh target PatternMatchPass (see the module docstring)."""

    def __init__(self, tree_root, groups: Iterable[tuple[str, Any]] = ()):
        """`groups`: (name, its pattern classes, or a GraphPatternEntry carrier's registration function)."""
        self.tree_root = tree_root
        self.groups: list[str] = []
        self.pass_ = fresh_pattern_pass()
        self.errors: list[str] = []
        self.registration_errors: dict[str, str] = {}  # pattern name -> why it did not register
        self.entries_by_pattern: dict[str, list] = {}
        self._sink: list[list[Replacement]] = [[]]  # where the entries' observers append (see merged())
        self._parts: list[GroupRunner] = []
        for group, classes in groups:
            self.groups.append(group)
            if callable(classes):
                self._register_entries(group, classes)
            else:
                for cls in classes:
                    self._register_pattern(group, cls)

    def _describe(self, exc: BaseException) -> str:
        return describe_error(exc, self.tree_root)

    def _register_pattern(self, group: str, cls) -> None:
        try:
            name = cls.name()
        except Exception as exc:  # noqa: BLE001 - a broken pattern class is the group's failure, reported
            self.errors.append(f"{group}: name() raised {self._describe(exc)}")
            return
        seen = _entry_ids(self.pass_.pattern_pass)
        try:
            self.pass_.register_pattern(name, cls.pattern, cls.replacement, cls.inputs())
        except Exception as exc:  # noqa: BLE001 - upstream raises for duplicates and broken patterns
            self.registration_errors[name] = self._describe(exc)
            self.errors.append(f"{group}: registering {name} failed: {self.registration_errors[name]}")
            return
        self._adopt(group, _new_entries(self.pass_.pattern_pass, seen), lambda _entry: name)

    def _register_entries(self, group: str, function) -> None:
        """A carrier registers its entries itself; each is known by its handler's name."""
        seen = _entry_ids(self.pass_.pattern_pass)
        try:
            function(self.pass_.pattern_pass)
        except Exception as exc:  # noqa: BLE001 - a broken carrier is the group's failure, reported
            self.errors.append(f"{group}: registering its entries failed: {self._describe(exc)}")
            return
        self._adopt(group, _new_entries(self.pass_.pattern_pass, seen),
                    lambda entry: getattr(getattr(entry, "handler", None), "__name__", group))

    def _adopt(self, group: str, entries: list, name_of) -> None:
        sink = self._sink
        for entry in entries:
            name = name_of(entry)
            self.entries_by_pattern.setdefault(name, []).append(entry)
            observe(entry, group, name, lambda r: sink[0].append(r))

    @classmethod
    def merged(cls, parts: Sequence[GroupRunner]) -> GroupRunner:
        """One pass holding the parts' registered patterns in the parts' order: what registering all their groups
        one after another gives (registration appends each pattern to the entries of its anchor op)."""
        whole = cls(parts[0].tree_root if parts else None)
        whole._parts = list(parts)
        for part in parts:
            whole.groups.extend(part.groups)
            whole.errors.extend(part.errors)
            whole.registration_errors.update(part.registration_errors)
            for name, entries in part.entries_by_pattern.items():
                whole.entries_by_pattern.setdefault(name, []).extend(entries)
            for key, entries in part.pass_.pattern_pass.patterns.items():
                whole.pass_.pattern_pass.patterns[key].extend(entries)
        return whole

    def _holders(self) -> list[GroupRunner]:
        """This one and every part it was merged from, at any depth: where its entries' observers append."""
        return [self, *(h for part in self._parts for h in part._holders())]

    def apply(self, gm, label: str = "", keep_graph: bool = False) -> GroupRun:
        """The pass (upstream's loop, to a fixpoint) on a copy of `gm` (kept in the run with `keep_graph`); what
        matching raised is in the run's errors (and `raised`), never thrown: a pattern can raise in the matcher."""
        import torch

        record: list[Replacement] = []
        for holder in self._holders():
            holder._sink[0] = record
        work = graph_copy(gm)
        before = {n.name for n in work.graph.nodes}
        errors, raised = list(self.errors), None
        try:
            with torch.no_grad():
                self.pass_(work)
        except Exception as exc:  # noqa: BLE001 - reported for this run
            errors.append(f"matching raised {self._describe(exc)}")
            raised = exc
        after = {n.name for n in work.graph.nodes}
        return GroupRun(label, tuple(self.groups), tuple(record), frozenset(before - after), tuple(errors),
                        work if keep_graph else None, raised)


def run_groups(gm, groups: Iterable[tuple[str, Any]], label: str, tree_root=None) -> GroupRun:
    """Register `groups` in a fresh target PatternMatchPass and apply it to a copy of `gm`."""
    return GroupRunner(tree_root, list(groups)).apply(gm, label)


def production_groups(target) -> list[str]:
    """The groups compiling with the target as it ships registers: pattern_registry order, flag on by default."""
    loaded = {g.group for g in target.groups if g.loaded}
    return [g.group for g in sorted(target.registry.groups, key=lambda g: g.position)
            if g.flag_default is True and g.group in loaded]
