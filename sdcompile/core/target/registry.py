"""Read the target's pattern registration without importing it (stdlib `ast`, so `status` stays fast).

Three places register a pattern group (the recipe's "three-file registration"):
  passes/__init__.py        pattern_registry = {"enable_x": ("XPatternGroup", "..patterns"), ...}   (order matters)
  compiliation_config.py    class FusionPatterns: enable_x: bool = True
  patterns/__init__.py      __all__ = [..., "XPatternGroup"]  +  from .x_pattern import XPatternGroup

A GraphPatternEntry carrier registers through a function instead, called in passes/__init__.py under its flag
before the registry's groups (the maintainers' rule), with the same FusionPatterns flag:
  if getattr(fusion_config, "enable_x", False):
      from ..patterns.x_pattern import register_x_graph_entries
      register_x_graph_entries(...)
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from sdcompile.core.target.discovery import TargetTree
from sdcompile.core.target.source_text import read_source
from sdcompile.util.errors import BadInput

REGISTRY_NAME = "pattern_registry"
FLAGS_CLASS = "FusionPatterns"
ENTRIES_FUNCTION = re.compile(r"register_\w+_graph_entries")
PATTERN_GROUP = "pattern group"
GRAPH_ENTRIES = "graph entries"
GRAPH_PASS = "graph pass"  # not registered: switched on by the backend calling it (a custom pass, on request only)


@dataclass(frozen=True)
class RegistryEntry:
    position: int  # 1-based order in pattern_registry: the order groups are registered with the pass
    flag: str
    group: str
    module: str  # relative module the group is imported from, e.g. "..patterns"
    line: int
    comment: str  # comment lines written just above the entry (upstream records ordering lessons there)


@dataclass(frozen=True)
class EntriesCall:
    """A GraphPatternEntry carrier passes/__init__.py registers under its flag."""

    position: int  # 1-based order among these calls (all of them run before pattern_registry's groups)
    flag: str
    function: str  # register_<model>_<op>_graph_entries
    module: str  # as imported there: "..patterns.x_pattern"
    line: int

    @property
    def patterns_module(self) -> str | None:
        """The module relative to patterns/ (".x_pattern"), when it lives there."""
        return self.module[len("..patterns"):] if self.module.startswith("..patterns.") else None


@dataclass(frozen=True)
class FlagDecl:
    name: str
    default: bool | None  # None when the default is not a bool literal
    line: int
    comment: str


@dataclass(frozen=True)
class PatternExport:
    group: str
    source_module: str | None  # ".rms_norm_pattern" for `from .rms_norm_pattern import RMSNormPatternGroup`
    in_all: bool
    line: int | None


@dataclass(frozen=True)
class RegisteredGroup:
    """One registry entry joined with its flag and export."""

    position: int
    flag: str
    group: str
    flag_declared: bool
    flag_default: bool | None
    exported: bool
    source_module: str | None
    pattern_file: str | None  # path relative to the target root, when the file exists
    comment: str
    # PATTERN_GROUP (group is a PatternGroup list) or GRAPH_ENTRIES (group is the registration function, position
    # 0: the call runs before every pattern_registry group)
    carrier: str = PATTERN_GROUP


@dataclass(frozen=True)
class TargetRegistry:
    entries: tuple[RegistryEntry, ...]
    flags: tuple[FlagDecl, ...]
    exports: tuple[PatternExport, ...]
    groups: tuple[RegisteredGroup, ...]
    entries_calls: tuple[EntriesCall, ...] = ()


def _parse(path: Path) -> tuple[ast.Module, list[str]]:
    text = read_source(path)
    try:
        return ast.parse(text, filename=str(path)), text.splitlines()
    except SyntaxError as exc:
        raise BadInput(f"{path}:{exc.lineno}: does not parse ({exc.msg})", "fix the syntax error first") from exc


def _comment_above(lines: list[str], lineno: int, stop_after: int) -> str:
    """The contiguous `#` lines directly above 1-based `lineno`, not going above `stop_after`."""
    found: list[str] = []
    i = lineno - 2
    while i >= stop_after and lines[i].strip().startswith("#"):
        found.append(lines[i].strip().lstrip("#").strip())
        i -= 1
    return " ".join(reversed(found))


def _const_str(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def find_registry_dict(tree: ast.Module) -> ast.AST | None:
    """The value assigned to `pattern_registry` anywhere in the module (it lives inside a function upstream)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == REGISTRY_NAME for t in node.targets
        ):
            return node.value
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == REGISTRY_NAME:
            return node.value
    return None


def read_registry_entries(path: Path) -> tuple[RegistryEntry, ...]:
    tree, lines = _parse(path)
    value = find_registry_dict(tree)
    if value is None:
        raise BadInput(f"{path}: no `{REGISTRY_NAME} = {{...}}` found", "is this a MindIE-SD passes/__init__.py?")
    if not isinstance(value, ast.Dict):
        raise BadInput(f"{path}:{value.lineno}: `{REGISTRY_NAME}` is not a dict literal", "keep it a literal dict")
    entries = []
    previous_end = value.lineno
    for position, (key, val) in enumerate(zip(value.keys, value.values, strict=True), start=1):
        flag = _const_str(key) if key is not None else None
        parts = val.elts if isinstance(val, ast.Tuple) else []
        group = _const_str(parts[0]) if len(parts) == 2 else None
        module = _const_str(parts[1]) if len(parts) == 2 else None
        if flag is None or group is None or module is None:
            raise BadInput(
                f"{path}:{val.lineno}: registry entry {position} is not `\"flag\": (\"Group\", \"module\")`",
                "write each entry as string literals",
            )
        entries.append(
            RegistryEntry(position, flag, group, module, key.lineno, _comment_above(lines, key.lineno, previous_end))
        )
        previous_end = val.end_lineno or val.lineno
    return tuple(entries)


def _flag_tested(test: ast.AST) -> str | None:
    """The flag an `if` tests: `getattr(config, "enable_x", ...)` or `config.enable_x`."""
    if (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "getattr"
            and len(test.args) >= 2):
        return _const_str(test.args[1])
    if isinstance(test, ast.Attribute) and test.attr.startswith("enable_"):
        return test.attr
    return None


def read_entries_calls(path: Path) -> tuple[EntriesCall, ...]:
    """Every `if <flag>: ... register_*_graph_entries(...)` block, in source order."""
    tree, _ = _parse(path)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.If) or (flag := _flag_tested(node.test)) is None:
            continue
        imported = {alias.asname or alias.name: "." * stmt.level + (stmt.module or "")
                    for stmt in node.body if isinstance(stmt, ast.ImportFrom) for alias in stmt.names}
        for stmt in node.body:
            call = stmt.value if isinstance(stmt, ast.Expr) else None
            if (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                    and ENTRIES_FUNCTION.fullmatch(call.func.id)):
                found.append((node.lineno, flag, call.func.id, imported.get(call.func.id, "")))
    return tuple(EntriesCall(i, flag, function, module, line)
                 for i, (line, flag, function, module) in enumerate(sorted(found), start=1))


def read_flags(path: Path) -> tuple[FlagDecl, ...]:
    tree, lines = _parse(path)
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == FLAGS_CLASS), None)
    if cls is None:
        raise BadInput(f"{path}: no `class {FLAGS_CLASS}` found", "is this MindIE-SD's compiliation_config.py?")
    flags = []
    previous_end = cls.lineno
    for stmt in cls.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            default = stmt.value.value if isinstance(stmt.value, ast.Constant) else None
            flags.append(
                FlagDecl(
                    stmt.target.id,
                    default if isinstance(default, bool) else None,
                    stmt.lineno,
                    _comment_above(lines, stmt.lineno, previous_end),
                )
            )
        previous_end = stmt.end_lineno or stmt.lineno
    return tuple(flags)


def read_exports(path: Path) -> tuple[PatternExport, ...]:
    tree, _ = _parse(path)
    in_all: list[str] = []
    imported: dict[str, tuple[str, int]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            if isinstance(node.value, (ast.List, ast.Tuple)):
                in_all = [s for s in (_const_str(e) for e in node.value.elts) if s]
        elif isinstance(node, ast.ImportFrom) and node.level >= 1:
            for alias in node.names:
                imported[alias.asname or alias.name] = ("." * node.level + (node.module or ""), node.lineno)
    names = list(dict.fromkeys([*in_all, *imported]))
    return tuple(
        PatternExport(
            group=name,
            source_module=imported.get(name, (None, None))[0],
            in_all=name in in_all,
            line=imported.get(name, (None, None))[1],
        )
        for name in names
    )


def pattern_file_for(tree: TargetTree, source_module: str | None) -> Path | None:
    """`.rms_norm_pattern` -> <patterns>/rms_norm_pattern.py, when it is a single-dot sibling module."""
    if not source_module or not source_module.startswith(".") or source_module.startswith(".."):
        return None
    candidate = tree.patterns_dir / (source_module[1:].replace(".", "/") + ".py")
    return candidate if candidate.is_file() else None


def read_target_registry(tree: TargetTree) -> TargetRegistry:
    entries = read_registry_entries(tree.passes_init)
    flags = read_flags(tree.config_file)
    exports = read_exports(tree.patterns_init)
    flag_by_name = {f.name: f for f in flags}
    export_by_group = {e.group: e for e in exports}
    groups = []
    for entry in entries:
        flag = flag_by_name.get(entry.flag)
        export = export_by_group.get(entry.group)
        file = pattern_file_for(tree, export.source_module if export else None)
        groups.append(
            RegisteredGroup(
                position=entry.position,
                flag=entry.flag,
                group=entry.group,
                flag_declared=flag is not None,
                flag_default=flag.default if flag else None,
                exported=bool(export and export.in_all and export.source_module),
                source_module=export.source_module if export else None,
                pattern_file=str(file.relative_to(tree.root)) if file else None,
                comment=entry.comment or (flag.comment if flag else ""),
            )
        )
    calls = read_entries_calls(tree.passes_init)
    ahead = []  # the carriers' calls run first: they come first, in their order
    for call in calls:
        flag = flag_by_name.get(call.flag)
        file = pattern_file_for(tree, call.patterns_module)
        ahead.append(
            RegisteredGroup(
                position=0,
                flag=call.flag,
                group=call.function,
                flag_declared=flag is not None,
                flag_default=flag.default if flag else None,
                exported=file is not None,
                source_module=call.patterns_module,
                pattern_file=str(file.relative_to(tree.root)) if file else None,
                comment=flag.comment if flag else "",
                carrier=GRAPH_ENTRIES,
            )
        )
    return TargetRegistry(entries, flags, exports, tuple(ahead + groups), calls)
