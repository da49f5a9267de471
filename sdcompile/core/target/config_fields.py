"""The fields the target's `class CompilationConfig` declares (compiliation_config.py), read with `ast` like the
registry (sdcompile.core.target.registry), never imported: what copy-audit and `backends` may tell a user to set."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from sdcompile.core.target.discovery import TargetTree, find_target
from sdcompile.core.target.source_text import read_source
from sdcompile.util.errors import BadInput, NotATarget

CONFIG_CLASS = "CompilationConfig"


@dataclass(frozen=True)
class ConfigFields:
    fields: tuple[str, ...]  # the class's annotated or assigned names, in source order
    source: str  # "<tree>/mindiesd/compilation/compiliation_config.py", or the documented release's citation
    from_tree: bool
    problem: str = ""  # why a known tree's class was not read ("" when it was, or no tree was known)


def read_config_fields(tree: TargetTree) -> ConfigFields:
    """The tree's CompilationConfig fields; none, with the problem, when the file does not parse or has no class."""
    path = tree.config_file
    try:
        module = ast.parse(read_source(path), filename=str(path))
    except (OSError, SyntaxError, BadInput) as exc:
        return ConfigFields((), str(path), False, f"{path} does not parse ({exc})")
    cls = next((n for n in module.body if isinstance(n, ast.ClassDef) and n.name == CONFIG_CLASS), None)
    if cls is None:
        return ConfigFields((), str(path), False, f"{path} has no `class {CONFIG_CLASS}`")
    names: list[str] = []
    for stmt in cls.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            names.append(stmt.target.id)
        elif isinstance(stmt, ast.Assign):
            names += [t.id for t in stmt.targets if isinstance(t, ast.Name)]
    return ConfigFields(tuple(names), str(path), True)


def target_config(repo: Path | str | None) -> ConfigFields | None:
    """The target tree's CompilationConfig fields (--repo, $SDCOMPILE_REPO or upward from here); None without a tree
    (callers then use MindIE-SD 3.1.0's documented fields). A --repo that is no tree is bad input."""
    try:
        tree = find_target(repo)
    except NotATarget:
        if repo:
            raise
        return None
    return read_config_fields(tree)
