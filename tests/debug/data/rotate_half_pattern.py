"""A rotate-half RoPE pattern over the whole head (float32), as a new pattern file would add it: registered after
the target's own groups, where WanResidualGatePattern (`x + y * gate`) takes the rope's final add first.

Imported inside the target's patterns package, so the relative imports resolve to the target's modules.
"""

import torch

from ..passes.register_pattern_to_pass import PatternBase

if torch.npu.is_available():
    import mindiesd


class FullRotateHalfRopePattern(PatternBase):
    @staticmethod
    def name():
        return "FullRotateHalfRopePattern-torch.float32"

    @staticmethod
    def inputs():
        x = torch.empty(1, 4, 2, 128, device="meta")
        return [x, torch.empty(4, 128, device="meta"), torch.empty(4, 128, device="meta")]

    @staticmethod
    def pattern(x, cos, sin):
        x1, x2 = torch.ops.aten.split.Tensor(x, 64, -1)
        rotated = torch.ops.aten.cat.default([torch.ops.aten.neg.default(x2), x1], -1)
        cos4 = torch.ops.aten.unsqueeze.default(torch.ops.aten.unsqueeze.default(cos, 0), 2)
        sin4 = torch.ops.aten.unsqueeze.default(torch.ops.aten.unsqueeze.default(sin, 0), 2)
        return torch.ops.aten.add.Tensor(torch.ops.aten.mul.Tensor(x, cos4), torch.ops.aten.mul.Tensor(rotated, sin4))

    @staticmethod
    def replacement(x, cos, sin):
        return mindiesd.layers.rotary_position_embedding(x, cos, sin, rotated_mode="rotated_half", head_first=False,
                                                         fused=True)


FullRotateHalfRopePatternGroup = [FullRotateHalfRopePattern]
