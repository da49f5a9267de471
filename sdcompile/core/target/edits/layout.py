"""Inserting and removing list/dict elements and statements with LibCST, keeping every comment and the layout.

The whitespace before an element (its "gap": the newline, the comment lines above it, the indent) belongs in
LibCST to the previous element's comma, or to the opening bracket for the first element. Inserting an element
splits the gap it lands in: the trailing comment of the previous line stays there, the comment lines above the
next element stay above that element. Removing an element merges the two gaps back. So removing what
`insert_element` added gives back the original bytes, and removing a hand-written element keeps the comments
that were above it.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

Whitespace = cst.BaseParenthesizableWhitespace


def _open(node: cst.List | cst.Dict) -> Whitespace:
    return node.lbracket.whitespace_after if isinstance(node, cst.List) else node.lbrace.whitespace_after


def _with_open(node: cst.List | cst.Dict, ws: Whitespace) -> cst.List | cst.Dict:
    if isinstance(node, cst.List):
        return node.with_changes(lbracket=node.lbracket.with_changes(whitespace_after=ws))
    return node.with_changes(lbrace=node.lbrace.with_changes(whitespace_after=ws))


def _close(node: cst.List | cst.Dict) -> Whitespace:
    return node.rbracket.whitespace_before if isinstance(node, cst.List) else node.rbrace.whitespace_before


def _with_close(node: cst.List | cst.Dict, ws: Whitespace) -> cst.List | cst.Dict:
    if isinstance(node, cst.List):
        return node.with_changes(rbracket=node.rbracket.with_changes(whitespace_before=ws))
    return node.with_changes(rbrace=node.rbrace.with_changes(whitespace_before=ws))


def _plain(ws: cst.ParenthesizedWhitespace, keep_first_line: bool) -> cst.ParenthesizedWhitespace:
    """The same line break and indent without the comment lines (and without the trailing comment unless kept)."""
    return cst.ParenthesizedWhitespace(
        first_line=ws.first_line if keep_first_line else cst.TrailingWhitespace(),
        empty_lines=[],
        indent=ws.indent,
        last_line=ws.last_line,
    )


def _separator(node: cst.List | cst.Dict) -> Whitespace:
    """The whitespace that separates two elements in this literal: one per line, or `, ` on one line."""
    elements = node.elements
    for el in elements[:-1]:
        if isinstance(el.comma, cst.Comma):
            ws = el.comma.whitespace_after
            return _plain(ws, keep_first_line=False) if isinstance(ws, cst.ParenthesizedWhitespace) else ws
    opening = _open(node)
    if isinstance(opening, cst.ParenthesizedWhitespace):
        return _plain(opening, keep_first_line=False)
    return cst.SimpleWhitespace(" ")


def _comma_before(node: cst.List | cst.Dict) -> cst.SimpleWhitespace:
    for el in node.elements:
        if isinstance(el.comma, cst.Comma):
            return el.comma.whitespace_before
    return cst.SimpleWhitespace("")


def _gap(node: cst.List | cst.Dict, index: int) -> Whitespace:
    """The whitespace in front of element `index` (0 < index < len means the previous element has a comma)."""
    return _open(node) if index == 0 else node.elements[index - 1].comma.whitespace_after


def _set_gap(node: cst.List | cst.Dict, elements: list, index: int, ws: Whitespace):
    if index == 0:
        return _with_open(node, ws), elements
    prev = elements[index - 1]
    elements[index - 1] = prev.with_changes(comma=prev.comma.with_changes(whitespace_after=ws))
    return node, elements


def _merge(first: Whitespace, second: Whitespace) -> Whitespace:
    """Join two gaps into one: the first's trailing comment, both gaps' comment lines, the second's indent."""
    if isinstance(first, cst.ParenthesizedWhitespace) and isinstance(second, cst.ParenthesizedWhitespace):
        return cst.ParenthesizedWhitespace(
            first_line=first.first_line,
            empty_lines=[*first.empty_lines, *second.empty_lines],
            indent=second.indent,
            last_line=second.last_line,
        )
    return first


def insert_element(node: cst.List | cst.Dict, index: int, element: cst.Element | cst.DictElement):
    """`node` with `element` at `index` (len(elements) appends), formatted like its neighbours."""
    elements = list(node.elements)
    if not elements:
        return node.with_changes(elements=[element.with_changes(comma=cst.MaybeSentinel.DEFAULT)])
    if not 0 <= index <= len(elements):
        raise IndexError(index)
    separator = _separator(node)
    if index == len(elements):
        last = elements[-1]
        if isinstance(last.comma, cst.Comma):  # trailing comma: the new element takes it over
            new = element.with_changes(comma=last.comma)
            elements[-1] = last.with_changes(comma=last.comma.with_changes(whitespace_after=separator))
        else:
            new = element.with_changes(comma=cst.MaybeSentinel.DEFAULT)
            elements[-1] = last.with_changes(
                comma=cst.Comma(whitespace_before=_comma_before(node), whitespace_after=separator)
            )
        elements.append(new)
        return node.with_changes(elements=elements)
    gap = _gap(node, index)
    if isinstance(gap, cst.ParenthesizedWhitespace):
        before_new, after_new = _plain(gap, keep_first_line=True), cst.ParenthesizedWhitespace(
            first_line=cst.TrailingWhitespace(), empty_lines=gap.empty_lines, indent=gap.indent, last_line=gap.last_line
        )
    else:
        before_new, after_new = gap, separator
    new = element.with_changes(comma=cst.Comma(whitespace_before=_comma_before(node), whitespace_after=after_new))
    node, elements = _set_gap(node, elements, index, before_new)
    elements.insert(index, new)
    return node.with_changes(elements=elements)


def remove_element(node: cst.List | cst.Dict, index: int):
    """`node` without element `index`; comment lines that were above it are kept (the inverse of insert_element)."""
    elements = list(node.elements)
    removed = elements[index]
    if len(elements) == 1:
        return node.with_changes(elements=[])
    gap = _gap(node, index)
    if index < len(elements) - 1:
        node, elements = _set_gap(node, elements, index, _merge(gap, removed.comma.whitespace_after))
    else:
        prev = elements[index - 1]
        if isinstance(removed.comma, cst.Comma):
            elements[index - 1] = prev.with_changes(
                comma=prev.comma.with_changes(whitespace_after=removed.comma.whitespace_after)
            )
        else:
            elements[index - 1] = prev.with_changes(comma=cst.MaybeSentinel.DEFAULT)
        close = _close(node)
        if isinstance(gap, cst.ParenthesizedWhitespace) and gap.empty_lines:
            if isinstance(close, cst.ParenthesizedWhitespace):
                node = _with_close(node, close.with_changes(empty_lines=[*gap.empty_lines, *close.empty_lines]))
    del elements[index]
    return node.with_changes(elements=elements)


def insert_statement(body: Sequence[cst.BaseStatement], index: int, statement: cst.BaseStatement,
                     take_leading_lines: bool = False) -> list[cst.BaseStatement]:
    """`body` with `statement` at `index`. With `take_leading_lines`, the statement it lands before hands over its
    leading blank/comment lines (used when inserting before the first import, so the gap above the block stays)."""
    body = list(body)
    if take_leading_lines and index < len(body):
        following = body[index]
        statement = statement.with_changes(leading_lines=following.leading_lines)
        body[index] = following.with_changes(leading_lines=[])
    body.insert(index, statement)
    return body


def remove_statement(body: Sequence[cst.BaseStatement], index: int) -> tuple[list[cst.BaseStatement], list]:
    """`body` without statement `index`; its leading lines go to the next statement (the inverse of
    insert_statement). Returns the lines to prepend to the block's footer when it was the last statement and
    carried comments (blank-only lines at the end are dropped)."""
    body = list(body)
    removed = body.pop(index)
    leading = list(removed.leading_lines)
    if index < len(body):
        following = body[index]
        body[index] = following.with_changes(leading_lines=[*leading, *following.leading_lines])
        return body, []
    return body, leading if any(line.comment is not None for line in leading) else []
