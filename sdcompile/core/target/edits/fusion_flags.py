"""compiliation_config.py: the `enable_<model>_<op>: bool = True` field of the `FusionPatterns` dataclass.

The field goes after the last existing field, whatever the registry position: a dataclass's field order is its
constructor's positional order, so appending is the only place that cannot change what existing callers pass.
"""

from __future__ import annotations

from pathlib import Path

import libcst as cst

from sdcompile.core.target.edits import UnexpectedLayout, parse
from sdcompile.core.target.edits.layout import insert_statement, remove_statement
from sdcompile.core.target.naming import RegistrationNames
from sdcompile.core.target.registry import FLAGS_CLASS


def _flags_class(module: cst.Module, where) -> tuple[int, cst.ClassDef]:
    found = [(i, s) for i, s in enumerate(module.body) if isinstance(s, cst.ClassDef) and s.name.value == FLAGS_CLASS]
    if len(found) != 1:
        raise UnexpectedLayout(
            f"{where}: expected one `class {FLAGS_CLASS}` at module level, found {len(found)}",
            "is this MindIE-SD's compiliation_config.py?",
        )
    index, cls = found[0]
    if not isinstance(cls.body, cst.IndentedBlock):
        raise UnexpectedLayout(f"{where}: `class {FLAGS_CLASS}` has no indented body", "write one field per line")
    return index, cls


def _field_name(stmt: cst.BaseStatement) -> str | None:
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
        node = stmt.body[0]
        if isinstance(node, cst.AnnAssign) and isinstance(node.target, cst.Name):
            return node.target.value
    return None


def _replace_class(module: cst.Module, index: int, cls: cst.ClassDef, block: cst.IndentedBlock) -> cst.Module:
    return module.with_changes(body=[*module.body[:index], cls.with_changes(body=block), *module.body[index + 1 :]])


def flag_names(source: bytes, where: Path | str) -> list[str]:
    _, cls = _flags_class(parse(source, where), where)
    return [n for n in (_field_name(s) for s in cls.body.body) if n]


def ensure_flag(source: bytes, names: RegistrationNames, where: Path | str) -> bytes:
    module = parse(source, where)
    index, cls = _flags_class(module, where)
    body = cls.body.body
    fields = [i for i, s in enumerate(body) if _field_name(s)]
    if any(_field_name(body[i]) == names.flag for i in fields):
        return module.bytes
    statement = cst.parse_statement(f"{names.flag}: bool = True\n")
    position = fields[-1] + 1 if fields else len(body)
    block = cls.body.with_changes(body=insert_statement(body, position, statement))
    return _replace_class(module, index, cls, block).bytes


def remove_flag(source: bytes, names: RegistrationNames, where: Path | str) -> bytes:
    module = parse(source, where)
    index, cls = _flags_class(module, where)
    body = cls.body.body
    positions = [i for i, s in enumerate(body) if _field_name(s) == names.flag]
    if not positions:
        return module.bytes
    if len(body) == 1:
        raise UnexpectedLayout(
            f"{where}: {names.flag} is the only field of {FLAGS_CLASS}; removing it would leave an empty class body",
            "remove it by hand",
        )
    new_body, to_footer = remove_statement(body, positions[-1])
    block = cls.body.with_changes(body=new_body, footer=[*to_footer, *cls.body.footer])
    return _replace_class(module, index, cls, block).bytes
