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


def audit_registration(tree: TargetTree, registry: TargetRegistry | None = None) -> RegistrationAudit:
    registry = registry or read_target_registry(tree)
    findings: list[Finding] = []

    def add(severity: str, kind: str, subject: str, message: str, where: str) -> None:
        findings.append(Finding(severity, kind, subject, message, where))

    passes, config, init = tree.passes_init, tree.config_file, tree.patterns_init
    declared = {f.name: f for f in registry.flags}
    registered_flags = {e.flag for e in registry.entries}
    export_by_group = {e.group: e for e in registry.exports}
    in_all, imported, bound = _init_bindings(init)

    for flag in _duplicates(e.flag for e in registry.entries):
        lines = ", ".join(str(e.line) for e in registry.entries if e.flag == flag)
        add("error", "duplicate-entry", flag, f"`{flag}` is a key of {REGISTRY_NAME} more than once (lines {lines}); "
            "Python keeps only the last, at the first one's position", _rel(tree, passes))
    for group in _duplicates(e.group for e in registry.entries):
        flags = ", ".join(e.flag for e in registry.entries if e.group == group)
        add("error", "duplicate-group", group, f"{group} is registered under several flags ({flags}); its patterns "
            "would be registered twice", _rel(tree, passes))
    for flag in _duplicates(f.name for f in registry.flags):
        add("error", "duplicate-flag", flag, f"`{flag}` is declared more than once in {FLAGS_CLASS}",
            _rel(tree, config))
    for name in _duplicates(in_all):
        add("error", "duplicate-export", name, f"{name} appears more than once in __all__", _rel(tree, init))
    for name in _duplicates(imported):
        add("error", "duplicate-import", name, f"{name} is imported more than once", _rel(tree, init))

    for entry in registry.entries:
        where = _rel(tree, passes, entry.line)
        if entry.flag not in declared:
            add("error", "entry-without-flag", entry.flag, f"registry entry `{entry.flag}` has no {FLAGS_CLASS} field, "
                "so getattr(fusion_config, flag, False) is False and the group is never registered", where)
        source = resolve_module(tree, entry.module, passes.parent)
        if source is None:
            add("error", "not-importable", entry.group, f"module {entry.module!r} of `{entry.flag}` does not resolve "
                f"from {_rel(tree, passes.parent)}", where)
            continue
        if source != init:  # the entry names a module directly instead of the patterns package
            reason = module_defines(source, entry.group)
            if reason:
                add("error", "not-importable", entry.group, reason, where)
            continue
        export = export_by_group.get(entry.group)
        if entry.group not in in_all:
            add("error", "not-exported", entry.group, f"{entry.group} is not in __all__ of patterns/__init__.py",
                _rel(tree, init))
        if export is None or export.source_module is None:
            if entry.group not in bound:
                add("error", "not-importable", entry.group, f"patterns/__init__.py does not import {entry.group}, "
                    "so importing it from ..patterns fails", _rel(tree, init))
            continue
        module_file = resolve_module(tree, export.source_module, init.parent)
        reason = (module_defines(module_file, entry.group) if module_file
                  else f"{export.source_module[1:]}.py does not exist")
        if reason:
            add("error", "not-importable", entry.group, reason, _rel(tree, init, export.line))

    for flag in registry.flags:
        if flag.name not in registered_flags:
            add("error", "flag-without-entry", flag.name, f"{FLAGS_CLASS}.{flag.name} has no {REGISTRY_NAME} entry, "
                "so setting it does nothing", _rel(tree, config, flag.line))
        elif flag.default is None:
            add("warning", "flag-default", flag.name, f"{FLAGS_CLASS}.{flag.name} has no True/False literal default",
                _rel(tree, config, flag.line))

    for name in in_all:
        if name not in bound:
            add("error", "export-unbound", name, f"__all__ names {name} but patterns/__init__.py never binds it, so "
                "`from ..patterns import *` fails", _rel(tree, init))
    registered_groups = {e.group for e in registry.entries}
    for export in registry.exports:  # a registered group's missing module is reported above, as not-importable
        if (export.source_module and export.group not in registered_groups
                and resolve_module(tree, export.source_module, init.parent) is None):
            add("error", "missing-module", export.group, f"patterns/__init__.py imports {export.group} from "
                f"{export.source_module}, which does not exist, so importing the patterns package fails",
                _rel(tree, init, export.line))
    for name in dict.fromkeys(in_all):
        if name not in registered_groups and name.endswith("PatternGroup"):
            add("warning", "exported-unregistered", name, f"{name} is exported but has no {REGISTRY_NAME} entry",
                _rel(tree, init))

    ordering = violations([e.flag for e in registry.entries])
    for v in ordering:
        add("warning", "ordering", v.must_come_first, f"`{v.must_come_first}` (#{v.position}) should be registered "
            f"before `{v.registered_after}` (#{v.after_position}): {v.reason}", _rel(tree, passes))

    findings.sort(key=lambda f: (f.severity != "error", f.kind, f.subject))
    return RegistrationAudit(
        target_root=str(tree.root),
        target_version=tree.version,
        entries=len(registry.entries),
        flags=len(registry.flags),
        exports=len(dict.fromkeys(in_all)),
        findings=tuple(findings),
        ordering=ordering,
        import_check="static: the module file exists, parses and defines the group (ast)",
        device="n/a",
        errors=sum(f.severity == "error" for f in findings),
        warnings=sum(f.severity == "warning" for f in findings),
        passed=not any(f.severity == "error" for f in findings),
    )
