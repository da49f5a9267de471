"""An RMSNorm pattern written for torch_npu before 2.9, where Tensor.to(dtype) on an NPU tensor traces as
npu._npu_dtype_cast: its casts are spelled with that op (as MindIE-SD's own patterns spell them below torch 2.9).
Against mismatch_modules.type3 (which casts with Tensor.float and Tensor.to), it matches where torch_npu casts that
way and is a cast-op mismatch (type 3) where Tensor.to traces as aten._to_copy.

Imported inside the target's patterns package, so the relative import resolves to the target's PatternBase.
"""

import torch

from ..passes.register_pattern_to_pass import PatternBase

if torch.npu.is_available():
    import torch_npu

EPS = torch.tensor(1e-6, dtype=torch.float32).item()


class NpuCastRmsNormPattern(PatternBase):
    @staticmethod
    def name():
        return "NpuCastRmsNormPattern"

    @staticmethod
    def inputs():
        return [torch.empty(2, 16, 64, dtype=torch.bfloat16, device="meta"),
                torch.empty(64, dtype=torch.bfloat16, device="meta")]

    @staticmethod
    def pattern(x, weight):
        upcast = torch.ops.npu._npu_dtype_cast.default(x, torch.float32)
        variance = torch.ops.aten.pow.Tensor_Scalar(upcast, 2)
        mean = torch.ops.aten.mean.dim(variance, [x.dim() - 1], True)
        rsqrt = torch.ops.aten.rsqrt.default(torch.ops.aten.add.Scalar(mean, EPS))
        return torch.ops.npu._npu_dtype_cast.default(upcast * rsqrt, torch.bfloat16) * weight

    @staticmethod
    def replacement(x, weight):
        return torch_npu.npu_rms_norm(x, weight, epsilon=EPS)[0]


NpuCastRmsNormPatternGroup = [NpuCastRmsNormPattern]
