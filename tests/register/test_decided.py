"""register for a pair whose scaffold wrote nothing: a dead end (no site located, or none a pattern could be written
for) is one line naming it and the command that says why, never a request for the file scaffold never wrote."""

from __future__ import annotations

import shlex

import pytest

from sdcompile.phases.register.decided import NOTHING_TO_REGISTER, decided_nothing
from sdcompile.phases.scaffold.facts import ScaffoldFacts
from sdcompile.util.errors import BadInput


def _facts(decision: str) -> ScaffoldFacts:
    return ScaffoldFacts(decision=decision, covering=(), flag="enable_cogview4_rms_norm", group="CogView4RmsNormGroup",
                         module="cogview4_rms_norm", kinds=(), files=(), graph_pass_class=None,
                         rows_need_graph_pass=False)


@pytest.mark.parametrize(("decision", "said"), [("nothing located", "found no rmsnorm site in cogview4"),
                                                ("cannot generate", "could write a pattern for none of cogview4's")])
def test_a_dead_end_scaffold_is_named_with_the_command_that_says_why(decision, said, tmp_path):
    with pytest.raises(BadInput) as raised:
        decided_nothing("cogview4", "rmsnorm", _facts(decision), tmp_path / "ws", named=False, repo=tmp_path / "tree")
    line = raised.value.one_line()
    assert line.startswith(f"nothing to register: scaffold {said}") and "pattern file" not in line
    command = line.split("`")[1]
    assert shlex.split(command)[:6] == ["sdcompile", "scaffold", "--model", "cogview4", "--op", "rmsnorm"]
    assert str(tmp_path / "tree") in command and str(tmp_path / "ws") in command  # pastes as the same pair


def test_naming_a_group_registers_it_whatever_scaffold_decided(tmp_path):
    for decision in ("nothing located", "cannot generate", *NOTHING_TO_REGISTER):
        assert decided_nothing("cogview4", "rmsnorm", _facts(decision), tmp_path, named=True) is None
    assert decided_nothing("cogview4", "rmsnorm", _facts("reuse"), tmp_path, named=False).decision == "reuse"
    assert decided_nothing("cogview4", "rmsnorm", _facts("generate"), tmp_path, named=False) is None
