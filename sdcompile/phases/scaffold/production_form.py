"""A graph-pass chain as the target's enabled groups leave it.

MindieSDBackend runs the pattern pass before freeze() and a custom graph pass after it, so the pass meets a chain
the enabled groups took part of with their fused op inside: MindIE-SD 3.1.0's residual-gate group (`x + y * gate`,
any dtype) turns the `x * cos + rotated * sin` tail of a RoPE chain into `mindiesd.residual_gate_add`. The pass
then holds the chain twice: as the model computes it (the groups off, or not matching) and in that form, written
from the after-freezing graph the production groups ran on, with the roles the whole chain was given.

The groups run here on a copy of the after-freezing graph, where the backend runs them on the graph before
freezing: their patterns match any node in their inputs' places (a get_attr as a placeholder), so they replace the
same chain ops there; integrate (phase 6) compiles with the backend itself and shows what the pass met.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sdcompile.core.graph.pattern_codegen import extract_chain
from sdcompile.phases.scaffold.results import Refused, Why
from sdcompile.phases.scaffold.sites import input_origins
from sdcompile.util.reasons import Reason


class ProductionStages:
    """Per after-freezing stage, a copy the production groups ran on (made once, on first use)."""

    def __init__(self, production):
        self.production = production
        self._made: dict[int, Any] = {}

    def of(self, stage):
        if id(stage) not in self._made:
            gm = self.production.apply(stage.gm, "production", keep_graph=True).graph
            self._made[id(stage)] = replace(stage, gm=gm, text="")
        return self._made[id(stage)]


def _new_output(chain, stage, by_name: dict):
    """The node standing for the chain's output in the production copy: the output itself when it stayed, else
    what its first reader outside the chain reads in its place."""
    if chain.output in by_name:
        return by_name[chain.output]
    old = stage.node(chain.output)
    inner = set(chain.nodes)
    for user in old.users:
        if user.name in inner or user.name not in by_name:
            continue
        position = user.all_input_nodes.index(old)
        now = by_name[user.name].all_input_nodes
        if len(now) == len(user.all_input_nodes):
            return now[position]
    return None


def production_form(chain, site, stages: ProductionStages, recipe, model_dtype) -> tuple[Any, Any] | None:
    """(the chain as the production groups leave it, the site in their after-freezing copy), or None when they
    leave it whole. Refused when what they leave is not one chain from the same inputs (they took ops across
    its edge)."""

    stage = stages.of(site.after_stage)
    by_name = {n.name: n for n in stage.gm.graph.nodes}
    if all(name in by_name for name in chain.nodes):
        return None
    original = {n.name for n in site.after_stage.gm.graph.nodes}
    inputs = {i.node for i in chain.inputs}
    inner = set(chain.nodes)
    out = _new_output(chain, site.after_stage, by_name)
    if out is None:
        raise Refused(Reason.of(Why.GROUPS_LEAVE, what="output-read"))
    members, stack = set(), [out]
    while stack:
        node = stack.pop()
        if node.name in inputs or node in members:
            continue
        if node.op != "call_function" or (node.name in original and node.name not in inner):
            raise Refused(Reason.of(Why.GROUPS_LEAVE, what="reads-outside", node=node.name))
        members.add(node)
        stack.extend(node.all_input_nodes)
    ordered = [n for n in stage.gm.graph.nodes if n in members]
    roles = {i.role: by_name[i.node] for i in chain.inputs if i.node in by_name}
    taken = extract_chain(ordered, recipe, model_dtype, input_origins(stage), roles=roles)
    var_of = {op.node: op.var for op in taken.ops}
    points = []
    for role, var in chain.bind_points:
        node = next(op.node for op in chain.ops if op.var == var)
        if node not in var_of:
            raise Refused(Reason.of(Why.GROUPS_LEAVE, what="role-replaced", node=str(node), role=role))
        points.append((role, var_of[node]))
    kept = [n for n in site.after if n.name in by_name and n.name not in inner]
    site_nodes = [n for n in stage.gm.graph.nodes if n in members or n.name in {k.name for k in kept}]
    return replace(taken, bind_points=tuple(points)), replace(site, after=tuple(site_nodes), after_stage=stage)
