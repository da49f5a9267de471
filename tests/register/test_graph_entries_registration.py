"""`register` for a GraphPatternEntry carrier on the real MindIE-SD 3.1.0 tree: the maintainers' two edits (the
FusionPatterns flag, and the registration call in passes/__init__.py under it, ahead of pattern_registry's loop),
no `__all__` or registry entry; idempotent, undone byte for byte, read back by status and `register --check`, and
the call really registers the carrier's entries when the target activates its patterns with the flag on."""

from __future__ import annotations

import pytest
from register_helpers import CONFIG, PASSES_INIT, git, write_pattern

from sdcompile.core.target.discovery import find_target
from sdcompile.core.target.registry import GRAPH_ENTRIES, read_target_registry
from sdcompile.core.target.registry_audit import audit_registration
from sdcompile.phases.register.phase import register
from sdcompile.util.errors import BadInput

# A hand-written carrier in the maintainers' form: one entry for `x * 2` -> `x + x` (any ops do: register reads the
# file statically; the activation test below registers it for real).
CARRIER = '''\
"""Toy RoPE carrier: GraphPatternEntry for mul(x, 2)."""

import torch
from torch._inductor.pattern_matcher import CallFunction, GraphPatternEntry, KeywordArg

CHAINS = []


def _handler(match, x):
    node = match.output_node()
    with match.graph.inserting_before(node):
        out = match.graph.call_function(torch.ops.aten.add.Tensor, (x, x))
    node.replace_all_uses_with(out)
    match.graph.erase_node(node)


def register_toy_rope_graph_entries(pattern_pass):
    pattern = CallFunction(torch.ops.aten.mul.Tensor, KeywordArg("x"), 2)
    GraphPatternEntry(pattern=pattern, extra_check=lambda m: True, handler=_handler).register(pattern_pass)
'''


@pytest.fixture
def carrier_tree(target):
    write_pattern(target, "toy_rope_pattern", CARRIER)
    return target


def test_a_carrier_gets_its_flag_and_its_call_ahead_of_the_registry(carrier_tree, tmp_path):
    original = {path: (carrier_tree / path).read_bytes() for path in (PASSES_INIT, CONFIG)}
    first = register(carrier_tree, "toy", "rope", workdir=tmp_path / "ws")
    assert first.carrier == GRAPH_ENTRIES and first.outcome == "registered"
    assert [(p.piece, p.before, p.after) for p in first.pieces] == [
        ("entries call", False, True), ("FusionPatterns flag", False, True)]
    passes = (carrier_tree / PASSES_INIT).read_text()
    call = passes.index("register_toy_rope_graph_entries(pattern_match_pass.pattern_pass)")
    assert passes.index('if getattr(fusion_config, "enable_toy_rope", False):') < call < passes.index("for config_key")
    assert "enable_toy_rope" not in passes[passes.index("pattern_registry = {"):passes.index("fusion_config =")]
    assert "ToyRopePatternGroup" not in (carrier_tree / "mindiesd/compilation/patterns/__init__.py").read_text()

    registry = read_target_registry(find_target(carrier_tree))
    (call_read,) = registry.entries_calls
    assert (call_read.flag, call_read.function, call_read.module) == (
        "enable_toy_rope", "register_toy_rope_graph_entries", "..patterns.toy_rope_pattern")
    carrier = registry.groups[0]
    assert (carrier.group, carrier.position, carrier.carrier, carrier.flag_default) == (
        "register_toy_rope_graph_entries", 0, GRAPH_ENTRIES, True)
    assert audit_registration(find_target(carrier_tree)).passed

    again = register(carrier_tree, "toy", "rope", workdir=tmp_path / "ws")
    assert again.outcome == "already registered" and not any(f.changed for f in again.files)
    undone = register(carrier_tree, "toy", "rope", workdir=tmp_path / "ws", undo=True)
    assert undone.outcome == "removed"
    assert {path: (carrier_tree / path).read_bytes() for path in original} == original
    assert git(carrier_tree, "status", "--porcelain", str(PASSES_INIT), str(CONFIG)) == ""


def test_check_reports_a_call_whose_function_is_missing(carrier_tree, tmp_path):
    register(carrier_tree, "toy", "rope", workdir=tmp_path / "ws")
    (carrier_tree / "mindiesd/compilation/patterns/toy_rope_pattern.py").write_text("CHAINS = []\n")
    audit = audit_registration(find_target(carrier_tree))
    assert not audit.passed
    assert [(f.kind, f.subject) for f in audit.findings if f.severity == "error"] == [
        ("not-importable", "register_toy_rope_graph_entries")]


def test_a_flag_that_another_carrier_calls_is_refused(carrier_tree, tmp_path):
    register(carrier_tree, "toy", "rope", workdir=tmp_path / "ws")
    write_pattern(carrier_tree, "other_rope_pattern", CARRIER.replace("toy_rope", "other_rope"))
    with pytest.raises(BadInput, match="already registers register_toy_rope_graph_entries"):
        register(carrier_tree, "other", "rope", flag="enable_toy_rope", group="OtherRopePatternGroup",
                 module="other_rope_pattern", workdir=tmp_path / "ws")


@pytest.mark.slow
def test_the_call_registers_the_entries_when_the_flag_is_on(carrier_tree, tmp_path):
    import torch

    from sdcompile.core.target.loader import load_target

    register(carrier_tree, "toy", "rope", workdir=tmp_path / "ws")
    target = load_target(find_target(carrier_tree), reload=True)
    assert target.group("enable_toy_rope").loaded

    class Doubler(torch.nn.Module):
        def forward(self, x):
            return torch.sin(x * 2)

    x = torch.linspace(-1.0, 1.0, 12).reshape(3, 4)
    for groups, hits in (((), {}), (("enable_toy_rope",), {"_handler": 1})):
        with torch.no_grad(), target.session(groups) as session:
            session.activate()
            out = torch.compile(Doubler(), backend=session.backend(), dynamic=False)(x)
        assert dict(session.hits_by_pattern) == hits
        torch.testing.assert_close(out, torch.sin(x * 2))
        ops = session.graphs[-1].after.op_counts()
        assert ("aten.add.Tensor" in ops) == bool(hits) and ("aten.mul.Tensor" in ops) != bool(hits)
