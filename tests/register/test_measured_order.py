"""Specific groups before the generic ones that also match their sites, measured on the model's graph.

A rotate-half RoPE that ends in its add(mul(x, cos), mul(x_rot, sin)) (tests/scaffold/data/rope_forms.py) is also
matched at that add by MindIE-SD 3.1.0's generic WanResidualGatePatternGroup (`x + y * gate`, registered early in
pattern_registry). scaffold measures it: with the generated group registered after the production groups, the
generic one still takes part of every site. register then places the generated group right before it (not at the
end), and the same reuse check finds the new group covering every site with the generic group on, as compiling
the model with the target as it ships does. Registered behind it instead, the generic group keeps taking them, and
`register --check` says so from the measurement. HiDream's RoPE, whose chain ends past the add, is taken by its
generated group wherever it is registered: nothing is measured and it is appended.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

GENERIC = "WanResidualGatePatternGroup"
GROUP = "RopehalfRopePatternGroup"
MODEL = ["--model-file", f"{Path(__file__).parents[1] / 'scaffold/data/rope_forms.py'}:rotate_half", "--name",
         "ropehalf"]


def _scaffold(cli, tree, ws, *extra, model=MODEL):
    out = cli("scaffold", *model, "--op", "rope", "--repo", str(tree), "--workdir", str(ws), "--json", *extra)
    assert out.exit_code == 0, out.stderr
    return json.loads(out.stdout)


def _register(cli, tree, ws, word, *extra):
    out = cli("register", "--model", word, "--op", "rope", "--repo", str(tree), "--workdir", str(ws), "--json", *extra)
    assert out.exit_code == 0, out.stderr
    return json.loads(out.stdout)


def _registry_order(cli, tree):
    out = cli("status", "--repo", str(tree), "--json")
    assert out.exit_code == 0, out.stderr
    return [g["group"] for g in json.loads(out.stdout)["target"]["groups"]]


def _takers(result):
    return [r["production"]["groups"] for r in result["sites"]]


@pytest.mark.slow
def test_a_shadowed_specific_group_is_registered_ahead_of_the_generic_one(mindiesd_tree, tmp_path, cli):
    ws = tmp_path / "ws"
    made = _scaffold(cli, mindiesd_tree, ws)
    assert made["decision"] == "generate" and made["names"]["group"] == GROUP, made["decision_reason"]
    assert made["shadowing_groups"] == [GENERIC]
    assert _takers(made) == [[GENERIC]] * len(made["sites"]) and made["sites"]

    result = _register(cli, mindiesd_tree, ws, "ropehalf")
    order = _registry_order(cli, mindiesd_tree)
    assert order.index(GROUP) == order.index(GENERIC) - 1, order
    assert result["position"] == order.index(GROUP) + 1
    placement = result["placement"]  # a typed field; the renderer says it in words
    assert (placement["before_flag"], placement["shadowing"], placement["position"]) == (
        "enable_wan_residual_gate", [GENERIC], result["position"]), placement

    # the target as it ships, with the new group: it covers every RoPE site, the generic group none of them
    again = _scaffold(cli, mindiesd_tree, tmp_path / "ws2", "--dry-run")
    assert again["decision"] == "reuse", again["decision_reason"]
    assert _takers(again) == [[GROUP]] * len(again["sites"])
    assert all(r["production"]["status"] == "replaced" for r in again["sites"])
    check = cli("register", "--check", "--repo", str(mindiesd_tree), "--workdir", str(ws), "--json")
    assert not [f for f in json.loads(check.stdout)["findings"] if f["kind"] == "shadowed"]


@pytest.mark.slow
def test_registered_behind_the_generic_group_its_sites_stay_taken_and_check_says_so(mindiesd_tree, tmp_path, cli):
    ws = tmp_path / "ws"
    _scaffold(cli, mindiesd_tree, ws)
    _register(cli, mindiesd_tree, ws, "ropehalf", "--after", "enable_wan_residual_gate")

    again = _scaffold(cli, mindiesd_tree, tmp_path / "ws2", "--dry-run", "--force")
    assert all(GENERIC in groups for groups in _takers(again)), _takers(again)
    check = cli("register", "--check", "--repo", str(mindiesd_tree), "--workdir", str(ws), "--json")
    shadowed = [f for f in json.loads(check.stdout)["findings"] if f["kind"] == "shadowed"]
    assert len(shadowed) == 1 and shadowed[0]["subject"] == GROUP, shadowed
    assert "`enable_wan_residual_gate`" in shadowed[0]["message"]


@pytest.mark.slow
def test_a_group_that_wins_wherever_it_is_registered_is_appended(mindiesd_tree, tmp_path, cli):
    ws = tmp_path / "ws"
    made = _scaffold(cli, mindiesd_tree, ws, model=["--model", "hidream"])
    assert {r["production"]["status"] for r in made["sites"]} == {"partly replaced"}  # the generic group alone
    assert made["shadowing_groups"] == []  # ... takes nothing once the generated group is registered, even last
    result = _register(cli, mindiesd_tree, ws, "hidream")
    assert result["position"] == result["registry_size"] and result["placement"] is None, result
