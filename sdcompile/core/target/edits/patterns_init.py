"""patterns/__init__.py: the group's `__all__` entry and its `from .<module> import <Group>` line."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import libcst as cst

from sdcompile.core.target.edits import UnexpectedLayout, parse, quote_of, string_value
from sdcompile.core.target.edits.layout import insert_element, insert_statement, remove_element, remove_statement
from sdcompile.core.target.naming import RegistrationNames


@dataclass(frozen=True)
class _Import:
    index: int  # position of the statement in module.body
    module: str  # ".rms_norm_pattern"
    names: tuple[str, ...]  # the names it binds (asname or name)


def _all_assignment(module: cst.Module, where) -> tuple[int, cst.Assign]:
    found = []
    for i, stmt in enumerate(module.body):
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Assign) and any(
                    isinstance(t.target, cst.Name) and t.target.value == "__all__" for t in small.targets
                ):
                    found.append((i, small))
    if len(found) != 1:
        raise UnexpectedLayout(
            f"{where}: expected one `__all__ = [...]` at module level, found {len(found)}",
            "keep a single __all__ list in patterns/__init__.py",
        )
    index, assign = found[0]
    if len(module.body[index].body) != 1 or not isinstance(assign.value, cst.List):
        raise UnexpectedLayout(f"{where}: `__all__` is not a list literal on its own line", "write it as a list")
    return index, assign


def _relative_imports(module: cst.Module) -> list[_Import]:
    imports = []
    for i, stmt in enumerate(module.body):
        if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1):
            continue
        node = stmt.body[0]
        if isinstance(node, cst.ImportFrom) and len(node.relative) == 1 and not isinstance(node.names, cst.ImportStar):
            name = cst.Module([]).code_for_node(node.module) if node.module else ""
            bound = tuple((a.asname.name.value if a.asname else a.name.value) for a in node.names)
            imports.append(_Import(i, "." + name, bound))
    return imports


def _set_all(module: cst.Module, index: int, assign: cst.Assign, new_list: cst.List) -> cst.Module:
    stmt = module.body[index]
    new_stmt = stmt.with_changes(body=[assign.with_changes(value=new_list)])
    return module.with_changes(body=[*module.body[:index], new_stmt, *module.body[index + 1 :]])


def exported_names(source: bytes, where: Path | str) -> list[str]:
    """The strings in __all__, in order (duplicates kept)."""
    _, assign = _all_assignment(parse(source, where), where)
    return [v for v in (string_value(e.value) for e in assign.value.elements) if v is not None]


def ensure_exported(source: bytes, names: RegistrationNames, where: Path | str) -> bytes:
    module = parse(source, where)
    index, assign = _all_assignment(module, where)
    elements = assign.value.elements
    if names.group not in [string_value(e.value) for e in elements]:
        quote = quote_of([e.value for e in elements], default="'")
        element = cst.Element(cst.SimpleString(f"{quote}{names.group}{quote}"))
        module = _set_all(module, index, assign, insert_element(assign.value, len(elements), element))

    imports = _relative_imports(module)
    binding = next((imp for imp in imports if names.group in imp.names), None)
    if binding is not None:
        if binding.module != names.import_module:
            raise UnexpectedLayout(
                f"{where}: {names.group} is already imported from {binding.module}, not {names.import_module}",
                "pass --module to match it, or fix the import by hand",
            )
        return module.bytes
    statement = cst.parse_statement(f"from {names.import_module} import {names.group}\n")
    if imports:
        # Keep the import block sorted where it is: after the last import whose module sorts before ours.
        earlier = [imp for imp in imports if imp.module < names.import_module]
        if earlier:
            body = insert_statement(module.body, earlier[-1].index + 1, statement)
        else:
            body = insert_statement(module.body, imports[0].index, statement, take_leading_lines=True)
    else:
        statement = statement.with_changes(leading_lines=[cst.EmptyLine()])
        body = insert_statement(module.body, len(module.body), statement)
    return module.with_changes(body=body).bytes


def remove_export(source: bytes, names: RegistrationNames, where: Path | str) -> bytes:
    module = parse(source, where)
    index, assign = _all_assignment(module, where)
    values = [string_value(e.value) for e in assign.value.elements]
    if names.group in values:
        last = len(values) - 1 - values[::-1].index(names.group)
        module = _set_all(module, index, assign, remove_element(assign.value, last))

    for imp in reversed(_relative_imports(module)):
        if names.group not in imp.names or imp.module != names.import_module:
            continue
        stmt = module.body[imp.index]
        node = stmt.body[0]
        if len(node.names) == 1:
            body, to_footer = remove_statement(module.body, imp.index)
            module = module.with_changes(body=body, footer=[*to_footer, *module.footer])
        else:  # `from .x import A, Group`: drop only our name
            aliases = list(node.names)
            pos = next(i for i, a in enumerate(aliases) if (a.asname.name.value if a.asname else a.name.value)
                       == names.group)
            removed = aliases.pop(pos)
            if pos == len(aliases):
                aliases[-1] = aliases[-1].with_changes(comma=removed.comma)
            new_stmt = stmt.with_changes(body=[node.with_changes(names=aliases)])
            module = module.with_changes(body=[*module.body[: imp.index], new_stmt, *module.body[imp.index + 1 :]])
        break
    return module.bytes
