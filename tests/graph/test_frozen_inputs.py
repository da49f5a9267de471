"""A fact analyze and debug rely on: torch's pattern matcher binds a pattern input to a frozen get_attr node,
so parameters becoming constants after freeze() does not by itself stop a register_replacement match."""

import torch
from torch._inductor.pattern_matcher import PatternMatcherPass, fwd_only, register_replacement

from sdcompile.core.graph.capture import capture_graphs
from sdcompile.core.graph.stages import STAGE_AFTER_FREEZING


class WeightedNorm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(8))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight


def _search(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def _replacement(x, w):
    return torch.ops.aten.relu(x) * w


def test_a_pattern_input_binds_to_a_frozen_parameter():
    capture = capture_graphs(WeightedNorm().eval(), {"x": torch.randn(2, 8)})
    gm = capture.stage(STAGE_AFTER_FREEZING)[0].gm
    weight_nodes = [n for n in gm.graph.nodes if n.op == "get_attr"]
    assert weight_nodes, "freeze() should have turned the weight into a get_attr constant"

    matcher = PatternMatcherPass()
    register_replacement(_search, _replacement, [torch.empty(2, 8), torch.empty(8)], fwd_only, matcher)
    assert matcher.apply(gm) == 1
    relu = [n for n in gm.graph.nodes if n.target == torch.ops.aten.relu.default]
    assert len(relu) == 1 and any(a in weight_nodes for n in relu[0].users for a in n.args)
