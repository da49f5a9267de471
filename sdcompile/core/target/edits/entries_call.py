"""passes/__init__.py: the call that registers a GraphPatternEntry carrier, under its FusionPatterns flag.

The maintainers' rule: such a carrier registers through `register_<model>_<op>_graph_entries(pattern_pass)`,
called in passes/__init__.py when its flag is on, not through `__all__` / `pattern_registry`. The block goes right
before the loop over `pattern_registry` (after the carriers already called there), so the entries are registered
ahead of every group: a specific chain is tried before a generic group that also matches part of it.

        if getattr(fusion_config, "enable_x", False):
            from ..patterns.x_pattern import register_x_graph_entries
            from .register_pattern_to_pass import patterns as pattern_match_pass
            register_x_graph_entries(pattern_match_pass.pattern_pass)
"""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import libcst.matchers as m

from sdcompile.core.target.edits import UnexpectedLayout, parse
from sdcompile.core.target.registry import REGISTRY_NAME


def _registry_loop(module: cst.Module, where) -> tuple[cst.IndentedBlock, int, str]:
    """The block holding `for ... in pattern_registry.items():`, the loop's index in it, and the config name
    the loop's body tests flags on (`fusion_config`)."""
    loops = m.findall(module, m.For(iter=m.Call(func=m.Attribute(value=m.Name(REGISTRY_NAME)))))
    if len(loops) != 1:
        raise UnexpectedLayout(f"{where}: expected one `for ... in {REGISTRY_NAME}.items():` loop, found {len(loops)}",
                               "add the carrier's registration call by hand (docs/graph-pattern-entry.md)")
    loop = loops[0]
    blocks = [b for b in m.findall(module, m.IndentedBlock()) if any(s is loop for s in b.body)]
    if len(blocks) != 1:
        raise UnexpectedLayout(f"{where}: the {REGISTRY_NAME} loop is not a statement of a block",
                               "add the carrier's registration call by hand")
    getattrs = m.findall(loop, m.Call(func=m.Name("getattr"), args=[m.Arg(value=m.Name()), m.ZeroOrMore()]))
    if not getattrs:
        raise UnexpectedLayout(f"{where}: the {REGISTRY_NAME} loop tests no `getattr(<config>, flag, ...)`",
                               "add the carrier's registration call by hand")
    return blocks[0], blocks[0].body.index(loop), getattrs[0].args[0].value.value


def _calls(block: cst.IndentedBlock, flag: str) -> list[int]:
    """Indices of the `if` statements of `block` testing `flag` and calling a registration function."""
    found = []
    for i, stmt in enumerate(block.body):
        if not isinstance(stmt, cst.If):
            continue
        tests_flag = m.findall(stmt.test, m.SimpleString()) and any(
            s.evaluated_value == flag for s in m.findall(stmt.test, m.SimpleString()))
        if tests_flag and m.findall(stmt.body, m.Call(func=m.Name())):
            found.append(i)
    return found


def ensure_entries_call(source: bytes, flag: str, function: str, module_name: str, where: Path | str) -> bytes:
    """Add the block before the registry loop; no change when a block for `flag` is there."""
    module = parse(source, where)
    block, at, config = _registry_loop(module, where)
    if _calls(block, flag):
        return module.bytes
    text = (f'if getattr({config}, "{flag}", False):\n'
            f"    from ..patterns.{module_name} import {function}\n"
            "    from .register_pattern_to_pass import patterns as pattern_match_pass\n"
            f"    {function}(pattern_match_pass.pattern_pass)\n")
    statement = cst.parse_statement(text).with_changes(leading_lines=[cst.EmptyLine(comment=cst.Comment(
        "# GraphPatternEntry carrier: registered ahead of pattern_registry's groups"))])
    new_block = block.with_changes(body=[*block.body[:at], statement, *block.body[at:]])
    return module.deep_replace(block, new_block).bytes


def remove_entries_call(source: bytes, flag: str, where: Path | str) -> bytes:
    module = parse(source, where)
    block, _at, _config = _registry_loop(module, where)
    indices = _calls(block, flag)
    if not indices:
        return module.bytes
    body = [s for i, s in enumerate(block.body) if i not in indices]
    return module.deep_replace(block, block.with_changes(body=body)).bytes
