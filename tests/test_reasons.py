"""Reasons as data hold together: every `Reason.of(Why.X, ...)` a phase makes passes facts its renderer's words for X
take (a code the tests never reach would otherwise fail only when a user meets it), every code has words, and a
Reason read back from JSON words the same as the one made in memory."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

from sdcompile.util.reasons import Reason, worded
from sdcompile.util.serialize import to_jsonable

PHASES = Path(__file__).resolve().parents[1] / "sdcompile" / "phases"
WORDED = ("analyze", "scaffold")  # the phases whose decisions return Reasons


def _made(phase: str):
    """(file:line, code name, keyword names, whether facts are also spread in with **) of each Reason.of(Why.X)."""
    for path in sorted((PHASES / phase).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "of"
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "Reason"):
                code = node.args[0]
                assert isinstance(code, ast.Attribute) and getattr(code.value, "id", "") == "Why", \
                    f"{path.name}:{node.lineno}: a Reason's code is a member of its phase's Why"
                names = [k.arg for k in node.keywords if k.arg is not None]
                yield f"{path.name}:{node.lineno}", code.attr, names, any(k.arg is None for k in node.keywords)


@pytest.mark.parametrize("phase", WORDED)
def test_every_reason_a_phase_makes_binds_its_words(phase):
    render = importlib.import_module(f"sdcompile.phases.{phase}.render")
    why = importlib.import_module(f"sdcompile.phases.{phase}.results").Why
    assert set(why) <= set(render.WORDS), f"codes without words: {set(why) - set(render.WORDS)}"
    made = list(_made(phase))
    assert {getattr(why, code) for _where, code, _names, _spread in made} == set(why), "codes no decision makes"
    for where, code, names, spread in made:
        signature = inspect.signature(render.WORDS[getattr(why, code)])
        if spread:  # facts spread from another reason: every named one must still be a parameter
            assert set(names) <= set(signature.parameters), (where, code, names, signature)
        else:
            signature.bind(**dict.fromkeys(names))  # TypeError names the fact that does not fit


def test_a_reason_read_back_from_json_words_the_same():
    from sdcompile.phases.scaffold.render import reason_text
    from sdcompile.phases.scaffold.results import Need, Why

    inner = Reason.of(Why.INNER_OP, inner=["aten.stack.default"], gained=["prims.cat"], entry_can=True)
    made = Reason.of(Why.AUTO_ENTRY, refusal=inner)
    counts = Reason.of(Why.GENERATE, generated=2, forced=False, counts={Need.REPLACEMENT: 2, Need.COVERED: 1})
    for reason in (made, counts):
        assert reason_text(to_jsonable(reason)) == reason_text(reason)
    assert "aten.stack.default sits inside the chain" in reason_text(made)
    assert reason_text(counts) == "2 site(s) get a generated replacement (2 pattern, 1 covered)"
    assert len({made, Reason.read(to_jsonable(made))}) == 1  # equal reasons group together, however they came
    assert worded(None, {}) == ""
