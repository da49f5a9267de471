"""The kernel catalog's schema: every field's type, checked before any field is used, so a user file with
`types = "TransData"` (a string where a list belongs, which Python would take as a set of characters) is exit 2
naming the entry and the field, not a silent mis-classification."""

from __future__ import annotations

from typing import Any

from sdcompile.util.errors import BadInput

STR, STRS, BOOL, TABLE = "a string", "a list of strings", "true or false", "a table of strings"
_FIELDS = {
    "family": {"name": STR, "title": STR, "role": STR, "op": STR},
    "family.rule": {"label": STR, "types": STRS, "not_types": STRS, "name_prefix": STR, "name_regex": STR,
                    "cores": STRS},
    "op": {"name": STR, "title": STR, "aliases": STRS, "fused_types": STRS, "eager_chain": STRS, "signature": STRS,
           "complex_signature": STRS, "high_rank_signature": STRS},
    "name_rule": {"label": STR, "regex": STR, "type": STR, "prefer_known": BOOL, "renames": TABLE},
    "key_rule": {"label": STR, "regex": STR},
}
_SECTIONS = {
    "copy_audit": {"recipe_search": STRS},
    "cpu": {"no_kernel": STRS, "fused_prefixes": STRS, "op_types": TABLE},
    "sources": {"npu_cores": STRS, "cpu_cores": STRS},
}
_EXAMPLE = {STR: '"text"', STRS: '["A", "B"]', BOOL: "true", TABLE: '{ Key = "Value" }'}


def check_catalog(data: dict[str, Any], source: str) -> None:
    """Raise BadInput naming `source`, the entry and the field whose value has the wrong type."""
    for array in ("family", "op", "name_rule", "key_rule"):
        entries = data.get(array, [])
        if not isinstance(entries, list):
            raise BadInput(f"{source}: `{array}` must be an array of tables ([[{array}]])",
                           f"write [[{array}]] entries")
        for i, entry in enumerate(entries, 1):
            where = f"[[{array}]] #{i}" + (f" ({entry.get('name')!r})" if isinstance(entry, dict) and entry.get("name")
                                            else "")
            _check_fields(entry, _FIELDS[array], source, where)
            if array == "family":
                rules = entry.get("rule", [])
                if not isinstance(rules, list):
                    raise BadInput(f"{source}: {where}: `rule` must be [[family.rule]] entries",
                                   "write [[family.rule]]")
                for j, rule in enumerate(rules, 1):
                    _check_fields(rule, _FIELDS["family.rule"], source, f"{where} rule #{j}")
    for section, fields in _SECTIONS.items():
        if section in data:
            _check_fields(data[section], fields, source, f"[{section}]")


def _check_fields(entry: Any, fields: dict[str, str], source: str, where: str) -> None:
    if not isinstance(entry, dict):
        raise BadInput(f"{source}: {where} is not a table", "see the kernels.toml schema")
    for field, kind in fields.items():
        if field in entry and not _is(entry[field], kind):
            value = entry[field]
            raise BadInput(f"{source}: {where}: `{field}` must be {kind}, got {type(value).__name__} {value!r}",
                           f"write {field} = {_EXAMPLE[kind]}")


def _is(value: Any, kind: str) -> bool:
    if kind == STR:
        return isinstance(value, str)
    if kind == STRS:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if kind == BOOL:
        return isinstance(value, bool)
    return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
