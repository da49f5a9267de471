"""A hand-written pattern (copied into a scratch tree by the tests) that replaces `x * (1 + scale) + shift` with
mindiesd::scale_shift while the modulation is [B, 1, D]: the op's Triton kernel reads scale and shift element by
element with x's offsets, so on the NPU it reads past them."""

import torch

from ..passes.register_pattern_to_pass import PatternBase

if hasattr(torch.npu, "is_available") and torch.npu.is_available():
    import mindiesd.layers.scale_shift  # noqa: F401


def create(dtype):
    class BroadcastScaleShiftPattern(PatternBase):
        @staticmethod
        def name():
            return __class__.__name__ + f"-{dtype}"

        @staticmethod
        def inputs():
            x = torch.empty(2, 16, 64, dtype=dtype, device="meta")
            scale = torch.empty(2, 1, 64, dtype=dtype, device="meta")
            shift = torch.empty(2, 1, 64, dtype=dtype, device="meta")
            return [x, scale, shift]

        @staticmethod
        def pattern(x, scale, shift):
            return x * (1 + scale) + shift

        @staticmethod
        def replacement(x, scale, shift):
            return torch.ops.mindiesd.scale_shift(x, scale, shift)

    return BroadcastScaleShiftPattern


BroadcastScaleShiftPatternGroup = [create(torch.float32)]
