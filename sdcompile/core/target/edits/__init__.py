"""Source edits of the three registration files through LibCST (comments and formatting of untouched code kept).

One module per file:
  patterns_init.py   patterns/__init__.py      `__all__` entry + `from .<module> import <Group>`
  registry_dict.py   passes/__init__.py        the `pattern_registry` entry, at a chosen position
  fusion_flags.py    compiliation_config.py    `enable_<model>_<op>: bool = True` in `FusionPatterns`
  entries_call.py    passes/__init__.py        a GraphPatternEntry carrier's registration call under its flag
  backend_pass.py    mindie_sd_backend.py      a custom graph pass's call (scaffold shows it, register checks it)

Each offers `ensure_*` (no change when already present) and `remove_*` (no change when absent), taking and
returning the file's bytes, so running an edit twice gives an empty diff and remove undoes add byte for byte.
Anything the edits cannot handle safely raises UnexpectedLayout (exit 2) before a file is written.
LibCST is imported only by these modules, never at CLI start-up.
"""

from __future__ import annotations

from pathlib import Path

from sdcompile.util.errors import BadInput


class UnexpectedLayout(BadInput):
    """A registration file is not laid out the way the edit needs (not a dict literal, no __all__, ...)."""


def parse(source: bytes, where: Path | str):
    import libcst as cst

    try:
        return cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        raise UnexpectedLayout(
            f"{where}:{exc.raw_line}: does not parse ({exc.message})", "fix the syntax error first"
        ) from exc


def string_value(node) -> str | None:
    """The value of a plain string literal node, else None."""
    import libcst as cst

    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def quote_of(nodes, default: str = '"') -> str:
    """The quote character the file already uses for these string literals."""
    import libcst as cst

    for node in nodes:
        if isinstance(node, cst.SimpleString) and node.prefix == "" and node.quote in ("'", '"'):
            return node.quote
    return default
