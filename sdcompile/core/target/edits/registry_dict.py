"""passes/__init__.py: the group's entry in the `pattern_registry` dict literal, at a chosen position.

Upstream builds the dict inside `activate_pattern_once().activate_pattern()` and registers groups in its order,
so the position is part of the edit.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import libcst as cst
import libcst.matchers as m

from sdcompile.core.target.edits import UnexpectedLayout, parse, quote_of, string_value
from sdcompile.core.target.edits.layout import insert_element, remove_element
from sdcompile.core.target.naming import RegistrationNames
from sdcompile.core.target.registry import REGISTRY_NAME

DEFAULT_PACKAGE = '"..patterns"'  # where upstream's entries import their groups from


def _registry_dict(module: cst.Module, where) -> cst.Dict:
    target = m.Name(REGISTRY_NAME)
    assigns = m.Assign(targets=[m.ZeroOrMore(), m.AssignTarget(target=target), m.ZeroOrMore()])
    values = [a.value for a in m.findall(module, assigns)]
    values += [a.value for a in m.findall(module, m.AnnAssign(target=target))]
    if len(values) != 1:
        raise UnexpectedLayout(
            f"{where}: expected one `{REGISTRY_NAME} = {{...}}`, found {len(values)}",
            "keep a single registry dict literal",
        )
    value = values[0]
    if not isinstance(value, cst.Dict):
        raise UnexpectedLayout(
            f"{where}: `{REGISTRY_NAME}` is not a dict literal", f"write {REGISTRY_NAME} as a literal {{...}} dict"
        )
    for el in value.elements:
        if not isinstance(el, cst.DictElement) or string_value(el.key) is None:
            raise UnexpectedLayout(
                f"{where}: `{REGISTRY_NAME}` has an entry that is not a string-keyed item", "write each entry literally"
            )
    return value


def registry_keys(source: bytes, where: Path | str) -> list[str]:
    return [string_value(el.key) for el in _registry_dict(parse(source, where), where).elements]


def _package_literal(elements) -> str:
    """The module string the existing entries use (their most common one, written exactly as they write it)."""
    literals = Counter(
        el.value.elements[1].value.value
        for el in elements
        if isinstance(el.value, cst.Tuple) and len(el.value.elements) == 2
        and isinstance(el.value.elements[1].value, cst.SimpleString)
    )
    return literals.most_common(1)[0][0] if literals else DEFAULT_PACKAGE


def ensure_registry_entry(source: bytes, names: RegistrationNames, index: int | None, where: Path | str) -> bytes:
    """Add `"<flag>": ("<Group>", "..patterns")` at 0-based `index` (None appends); no change if the flag is there."""
    module = parse(source, where)
    registry = _registry_dict(module, where)
    elements = registry.elements
    if names.flag in [string_value(el.key) for el in elements]:
        return module.bytes
    q = quote_of([el.key for el in elements])
    text = f"{{{q}{names.flag}{q}: ({q}{names.group}{q}, {_package_literal(elements)})}}"
    element = cst.parse_expression(text).elements[0]
    position = len(elements) if index is None else index
    return module.deep_replace(registry, insert_element(registry, position, element)).bytes


def remove_registry_entry(source: bytes, names: RegistrationNames, where: Path | str) -> bytes:
    module = parse(source, where)
    registry = _registry_dict(module, where)
    keys = [string_value(el.key) for el in registry.elements]
    if names.flag not in keys:
        return module.bytes
    return module.deep_replace(registry, remove_element(registry, keys.index(names.flag))).bytes
