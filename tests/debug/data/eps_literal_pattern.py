"""An RMSNorm pattern for models that write eps as the Python literal 1e-6 (mismatch_modules.type2): the fix
`sdcompile debug` proposes for that model, as a pattern file to check with `--pattern-file`.

Imported inside the target's patterns package, so the relative import resolves to the target's PatternBase.
"""

import torch

from ..passes.register_pattern_to_pass import PatternBase

if torch.npu.is_available():
    import torch_npu


def create(dtype, eps):
    class LiteralEpsRmsNormPattern(PatternBase):
        @staticmethod
        def name():
            return f"LiteralEpsRmsNormPattern-{dtype}-{eps}"

        @staticmethod
        def inputs():
            return [torch.empty(2, 16, 64, dtype=dtype, device="meta"), torch.empty(64, dtype=dtype, device="meta")]

        @staticmethod
        def pattern(x, weight):
            variance = torch.ops.aten.pow.Tensor_Scalar(x, 2)
            mean = torch.ops.aten.mean.dim(variance, [x.dim() - 1], True)
            rsqrt = torch.ops.aten.rsqrt.default(torch.ops.aten.add.Scalar(mean, eps))
            return x * rsqrt * weight

        @staticmethod
        def replacement(x, weight):
            return torch_npu.npu_rms_norm(x, weight, epsilon=eps)[0]

    return LiteralEpsRmsNormPattern


LiteralEpsRmsNormPatternGroup = [create(torch.bfloat16, 1e-6)]
