"""The mindie_sd_backend.py edit that runs a custom graph pass, through LibCST: two statements inside
`MindieSDBackend.compile`'s nested `graph_rewrite_after_freezing`, right after its redundant-node-elimination
call (or first in its body when there is none):

    from .passes.<module> import <PassClass>
    <PassClass>()(fx_graph)

scaffold never writes this file (it writes only new files; the three registration edits are `register`'s): it
shows this edit as a unified diff and saves it as a patch. Computing it twice on an edited file gives an empty
diff, so the saved patch always describes the edit still to make. `register` checks that the backend makes the call
(`calls_pass`): that is what switches a custom pass on.
"""

from __future__ import annotations

from pathlib import Path

from sdcompile.core.target.edits import UnexpectedLayout, parse

FUNCTION = "graph_rewrite_after_freezing"
ELIMINATION_CALL = "apply_redundant_node_elimination_pass"


def _find_function(module, where):
    import libcst as cst
    import libcst.matchers as m

    found = m.findall(module, m.FunctionDef(name=m.Name(FUNCTION)))
    if len(found) != 1:
        raise UnexpectedLayout(f"{where}: expected one `def {FUNCTION}`, found {len(found)}",
                               "add the pass call by hand where the graph is rewritten after freeze()")
    func = found[0]
    if not isinstance(func.body, cst.IndentedBlock) or not func.params.params:
        raise UnexpectedLayout(f"{where}: `{FUNCTION}` has no indented body or no graph parameter",
                               "add the pass call by hand")
    return func


def _calls_pass(func, pass_class: str) -> bool:
    import libcst.matchers as m

    return bool(m.findall(func, m.ImportAlias(name=m.Name(pass_class))))


def calls_pass(source: bytes, pass_class: str, where: Path | str) -> bool:
    """Whether the backend's graph_rewrite_after_freezing imports `pass_class` (the edit above, made)."""
    return _calls_pass(_find_function(parse(source, where), where), pass_class)


def ensure_pass_call(source: bytes, module: str, pass_class: str, comment: str, where: Path | str) -> bytes:
    """The backend source with the pass call added (unchanged when it is already there)."""
    import libcst as cst
    import libcst.matchers as m

    tree = parse(source, where)
    func = _find_function(tree, where)
    if _calls_pass(func, pass_class):
        return source
    graph = func.params.params[0].name.value
    statements = cst.parse_module(
        f"from .passes.{module} import {pass_class}\n{pass_class}()({graph})\n"
    ).body
    first = statements[0].with_changes(
        leading_lines=[cst.EmptyLine(comment=cst.Comment(f"# {line}")) for line in comment.splitlines()]
    )
    body = list(func.body.body)
    at = next((i + 1 for i, stmt in enumerate(body)
               if m.findall(stmt, m.Attribute(attr=m.Name(ELIMINATION_CALL)))), 0)
    new_body = body[:at] + [first, *statements[1:]] + body[at:]

    class _Insert(cst.CSTTransformer):
        def leave_FunctionDef(self, original, updated):
            if original is func:
                return updated.with_changes(body=updated.body.with_changes(body=new_body))
            return updated

    return tree.visit(_Insert()).code.encode(tree.encoding)
