"""Audit of a target's registration: the three places agree, every registered group can be found, no duplicates.

Statically, with `ast` (the pattern modules import torch_npu, so importing them needs an NPU or its emulation):
"importable" here means the module the group comes from exists, parses and defines the name at top level.
Errors are inconsistencies that break or silently disable a pattern; warnings are worth a look but legal.
"""

from __future__ import annotations

import ast
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

from sdcompile.core.target.discovery import TargetTree
from sdcompile.core.target.ordering import OrderingViolation, violations
from sdcompile.core.target.registry import FLAGS_CLASS, REGISTRY_NAME, TargetRegistry, read_target_registry
from sdcompile.core.target.source_text import read_source
from sdcompile.util.errors import BadInput


@dataclass(frozen=True)
class Finding:
    severity: str  # "error" (exit 1) or "warning"
    kind: str  # stable short id, e.g. "flag-without-entry"
    subject: str  # the flag or group concerned
    message: str
    where: str  # file:line relative to the target root, or the file


@dataclass(frozen=True)
class RegistrationAudit:
    target_root: str
    target_version: str
    entries: int
    flags: int
    exports: int
    findings: tuple[Finding, ...]
    ordering: tuple[OrderingViolation, ...]
    import_check: str  # how "importable" was decided
    device: str  # "n/a" for the static check; the device the modules were imported under otherwise
    errors: int
    warnings: int
    passed: bool  # no errors (warnings do not fail the audit)
    recovered: str | None = None  # an interrupted edit this check completed or rolled back first


def _rel(tree: TargetTree, path: Path, line: int | None = None) -> str:
    rel = str(path.relative_to(tree.root)) if path.is_relative_to(tree.root) else str(path)
    return f"{rel}:{line}" if line else rel


def _top_level_statements(body: list[ast.stmt]):
    """Module-level statements, including those under top-level `if`/`try` (conditional definitions)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If):
            yield from _top_level_statements(stmt.body + stmt.orelse)
        elif isinstance(stmt, ast.Try):
            yield from _top_level_statements(stmt.body + stmt.orelse + stmt.finalbody
                                             + [s for h in stmt.handlers for s in h.body])


def _bound_names(stmt: ast.stmt) -> list[str]:
    if isinstance(stmt, ast.Assign):
        names = []
        for target in stmt.targets:
            for node in ast.walk(target):
                if isinstance(node, ast.Name):
                    names.append(node.id)
        return names
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        return [stmt.target.id]
    if isinstance(stmt, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
        return [stmt.name]
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in stmt.names]
    return []


def module_defines(path: Path, name: str) -> str | None:
    """None when the module file at `path` defines `name` at top level, else why it does not."""
    if not path.is_file():
        return f"{path.name} does not exist"
    try:
        tree = ast.parse(read_source(path), filename=str(path))
    except SyntaxError as exc:
        return f"{path.name}:{exc.lineno} does not parse ({exc.msg})"
    except BadInput as exc:
        return f"{path.name} cannot be read ({exc.message})"
    except OSError as exc:
        return f"{path.name} cannot be read ({exc})"
    for stmt in _top_level_statements(tree.body):
        if name in _bound_names(stmt):
            return None
    return f"{path.name} does not define {name} at top level"


def resolve_module(tree: TargetTree, module: str, from_package: Path) -> Path | None:
    """The file a module string names: a package's __init__.py or a module .py; None when neither exists."""
    if module.startswith("."):
        level = len(module) - len(module.lstrip("."))
        base = from_package
        for _ in range(level - 1):
            base = base.parent
        parts = [p for p in module[level:].split(".") if p]
    else:
        base, parts = tree.root, module.split(".")
    candidate = base.joinpath(*parts)
    for path in (candidate / "__init__.py", candidate.with_suffix(".py")):
        if path.is_file():
            return path
    return None


def _duplicates(values) -> list[str]:
    return [v for v, n in Counter(values).items() if n > 1]


def _init_bindings(path: Path) -> tuple[list[str], list[str], set[str]]:
    """patterns/__init__.py: the __all__ strings (with repeats), names bound by imports (with repeats), all names."""
    tree = ast.parse(read_source(path), filename=str(path))
    in_all: list[str] = []
    imported: list[str] = []
    bound: set[str] = set()
    for stmt in _top_level_statements(tree.body):
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in stmt.targets):
            if isinstance(stmt.value, (ast.List, ast.Tuple)):
                in_all += [e.value for e in stmt.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            continue
        names = _bound_names(stmt)
        if isinstance(stmt, ast.ImportFrom):
            imported += names
        bound.update(names)
    return in_all, imported, bound


def with_findings(audit: RegistrationAudit, extra: list[Finding], import_check: str, device: str) -> RegistrationAudit:
    """The audit with more findings (e.g. from really importing the modules), its counts and verdict redone."""
    findings = sorted([*audit.findings, *extra], key=lambda f: (f.severity != "error", f.kind, f.subject))
    return replace(
        audit,
        findings=tuple(findings),
        import_check=import_check,
        device=device,
        errors=sum(f.severity == "error" for f in findings),
        warnings=sum(f.severity == "warning" for f in findings),
        passed=not any(f.severity == "error" for f in findings),
    )


class _Audit:
    """One audit run: the registration as read, and the findings in the order the checks make them (the final
    sort keeps that order among findings of one kind and subject)."""

    def __init__(self, tree: TargetTree, registry: TargetRegistry):
        self.tree, self.registry = tree, registry
        self.passes, self.config, self.init = tree.passes_init, tree.config_file, tree.patterns_init
        self.declared = {f.name: f for f in registry.flags}
        self.export_by_group = {e.group: e for e in registry.exports}
        self.registered_groups = {e.group for e in registry.entries}
        self.in_all, self.imported, self.bound = _init_bindings(self.init)
        self.findings: list[Finding] = []

    def add(self, severity: str, kind: str, subject: str, message: str, where: str) -> None:
        self.findings.append(Finding(severity, kind, subject, message, where))

    def rel(self, path: Path, line: int | None = None) -> str:
        return _rel(self.tree, path, line)

    # -- the checks, in report order
    def duplicates(self) -> None:
        entries, passes, init = self.registry.entries, self.passes, self.init
        for flag in _duplicates(e.flag for e in entries):
            lines = ", ".join(str(e.line) for e in entries if e.flag == flag)
            self.add("error", "duplicate-entry", flag, f"`{flag}` is a key of {REGISTRY_NAME} more than once (lines "
                     f"{lines}); Python keeps only the last, at the first one's position", self.rel(passes))
        for group in _duplicates(e.group for e in entries):
            flags = ", ".join(e.flag for e in entries if e.group == group)
            self.add("error", "duplicate-group", group, f"{group} is registered under several flags ({flags}); its "
                     "patterns would be registered twice", self.rel(passes))
        for flag in _duplicates(f.name for f in self.registry.flags):
            self.add("error", "duplicate-flag", flag, f"`{flag}` is declared more than once in {FLAGS_CLASS}",
                     self.rel(self.config))
        for name in _duplicates(self.in_all):
            self.add("error", "duplicate-export", name, f"{name} appears more than once in __all__", self.rel(init))
        for name in _duplicates(self.imported):
            self.add("error", "duplicate-import", name, f"{name} is imported more than once", self.rel(init))

    def entry(self, entry) -> None:
        """A registry entry: its flag is declared and its group can be imported from where it names it."""
        passes = self.passes
        where = self.rel(passes, entry.line)
        if entry.flag not in self.declared:
            self.add("error", "entry-without-flag", entry.flag, f"registry entry `{entry.flag}` has no {FLAGS_CLASS} "
                     "field, so getattr(fusion_config, flag, False) is False and the group is never registered", where)
        source = resolve_module(self.tree, entry.module, passes.parent)
        if source is None:
            self.add("error", "not-importable", entry.group, f"module {entry.module!r} of `{entry.flag}` does not "
                     f"resolve from {self.rel(passes.parent)}", where)
        elif source != self.init:  # the entry names a module directly instead of the patterns package
            reason = module_defines(source, entry.group)
            if reason:
                self.add("error", "not-importable", entry.group, reason, where)
        else:
            self.entry_in_patterns(entry)

    def entry_in_patterns(self, entry) -> None:
        """An entry importing its group from the patterns package: exported there, and its module defines it."""
        init = self.init
        export = self.export_by_group.get(entry.group)
        if entry.group not in self.in_all:
            self.add("error", "not-exported", entry.group, f"{entry.group} is not in __all__ of patterns/__init__.py",
                     self.rel(init))
        if export is None or export.source_module is None:
            if entry.group not in self.bound:
                self.add("error", "not-importable", entry.group, f"patterns/__init__.py does not import "
                         f"{entry.group}, so importing it from ..patterns fails", self.rel(init))
            return
        module_file = resolve_module(self.tree, export.source_module, init.parent)
        reason = (module_defines(module_file, entry.group) if module_file
                  else f"{export.source_module[1:]}.py does not exist")
        if reason:
            self.add("error", "not-importable", entry.group, reason, self.rel(init, export.line))

    def entries_call(self, call) -> None:
        """A GraphPatternEntry carrier's call: its flag is declared and its module defines the function."""
        where = self.rel(self.passes, call.line)
        if call.flag not in self.declared:
            self.add("error", "entry-without-flag", call.flag, f"`{call.function}` is called under `{call.flag}`, "
                     f"which has no {FLAGS_CLASS} field, so the carrier is never registered", where)
        source = resolve_module(self.tree, call.module, self.passes.parent) if call.module else None
        if source is None:
            self.add("error", "not-importable", call.function, f"module {call.module!r} of `{call.function}` does "
                     f"not resolve from {self.rel(self.passes.parent)}", where)
        elif (reason := module_defines(source, call.function)) is not None:
            self.add("error", "not-importable", call.function, reason, where)

    def shadowed(self, measured: dict[str, tuple[str, tuple[str, ...]]]) -> None:
        """Measured shadowing (`measured`: group -> (where it was measured, the groups that took part of its
        sites)): a generic group registered ahead of a specific group whose sites it takes."""
        position = {e.group: e for e in self.registry.entries}
        for group, (source, takers) in measured.items():
            mine = position.get(group)
            for taker in takers:
                theirs = position.get(taker)
                if mine is not None and theirs is not None and theirs.position < mine.position:
                    self.add("warning", "shadowed", group, f"`{theirs.flag}` (#{theirs.position}) is registered "
                             f"before `{mine.flag}` (#{mine.position}) and takes part of its sites (measured: "
                             f"{source}): register {group} before it (--undo, then register again)",
                             self.rel(self.passes, theirs.line))

    def flags(self) -> None:
        registered_flags = {e.flag for e in self.registry.entries} | {c.flag for c in self.registry.entries_calls}
        for flag in self.registry.flags:
            if flag.name not in registered_flags:
                self.add("error", "flag-without-entry", flag.name, f"{FLAGS_CLASS}.{flag.name} has no "
                         f"{REGISTRY_NAME} entry, so setting it does nothing", self.rel(self.config, flag.line))
            elif flag.default is None:
                self.add("warning", "flag-default", flag.name, f"{FLAGS_CLASS}.{flag.name} has no True/False "
                         "literal default", self.rel(self.config, flag.line))

    def exports(self) -> None:
        init = self.init
        for name in self.in_all:
            if name not in self.bound:
                self.add("error", "export-unbound", name, f"__all__ names {name} but patterns/__init__.py never binds "
                         "it, so `from ..patterns import *` fails", self.rel(init))
        for export in self.registry.exports:  # a registered group's missing module is reported as not-importable
            if (export.source_module and export.group not in self.registered_groups
                    and resolve_module(self.tree, export.source_module, init.parent) is None):
                self.add("error", "missing-module", export.group, f"patterns/__init__.py imports {export.group} from "
                         f"{export.source_module}, which does not exist, so importing the patterns package fails",
                         self.rel(init, export.line))
        for name in dict.fromkeys(self.in_all):
            if name not in self.registered_groups and name.endswith("PatternGroup"):
                self.add("warning", "exported-unregistered", name, f"{name} is exported but has no {REGISTRY_NAME} "
                         "entry", self.rel(init))

    def ordering(self) -> tuple[OrderingViolation, ...]:
        found = violations([e.flag for e in self.registry.entries])
        for v in found:
            self.add("warning", "ordering", v.must_come_first,
                     f"`{v.must_come_first}` (#{v.position}) should be registered before `{v.registered_after}` "
                     f"(#{v.after_position}): {v.reason}", self.rel(self.passes))
        return found


def audit_registration(tree: TargetTree, registry: TargetRegistry | None = None,
                       measured: dict | None = None) -> RegistrationAudit:
    """`measured`: group -> (where, groups scaffold's reuse check saw take part of its sites), from a workspace."""
    audit = _Audit(tree, registry or read_target_registry(tree))
    audit.duplicates()
    for entry in audit.registry.entries:
        audit.entry(entry)
    for call in audit.registry.entries_calls:
        audit.entries_call(call)
    audit.shadowed(measured or {})
    audit.flags()
    audit.exports()
    ordering = audit.ordering()

    findings = sorted(audit.findings, key=lambda f: (f.severity != "error", f.kind, f.subject))
    return RegistrationAudit(
        target_root=str(tree.root),
        target_version=tree.version,
        entries=len(audit.registry.entries),
        flags=len(audit.registry.flags),
        exports=len(dict.fromkeys(audit.in_all)),
        findings=tuple(findings),
        ordering=ordering,
        import_check="static: the module file exists, parses and defines the group (ast)",
        device="n/a",
        errors=sum(f.severity == "error" for f in findings),
        warnings=sum(f.severity == "warning" for f in findings),
        passed=not any(f.severity == "error" for f in findings),
    )
