"""Off/on profile pairs of one fusion, written as torch_npu writes kernel_details.csv (the full header with Stream ID
and the shape columns, start times with a trailing TAB, shapes in doubled quotes), one per cause of the recipe's
catalog. The model: L layers of a projection (MatMulV3) and two RoPE sites (q and k) before attention; off, each
site runs the eager chain (Neg, ConcatD, Mul, Mul, Add); on, the fused RotaryPositionEmbedding runs instead, with
what each scenario brings beside it.

    python tests/benefit/profile_pairs.py OUT_FOLDER   # writes every scenario's off/ and on/ under OUT_FOLDER
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

HEADER = ("Step Id,Device_id,Model ID,Task ID,Stream ID,Name,Type,OP State,Accelerator Core,Start Time(us),"
          "Duration(us),Wait Time(us),Block Num,Mix Block Num,HF32 Eligible,Input Shapes,Input Data Types,"
          "Input Formats,Output Shapes,Output Data Types,Output Formats,Context ID")
EPOCH_US = 1718873628_000000
LAYERS, STEPS = 4, 2
X = "1,1024,8,64"  # one site's q or k: [B, S, heads, head_dim], bf16 (1 MiB)
HALF = "1,1024,8,32"
TABLE = "1,1024,1,64"


@dataclass(frozen=True)
class K:
    name: str
    type: str
    us: float
    shapes: str = X
    dtypes: str = "DT_BF16"
    stream: int = 2
    core: str = "AI_VECTOR_CORE"


MATMUL = K("aclnnMatmul_MatMulV3Common_MatMulV3", "MatMulV3", 120.0, "1024,512;512,512", "DT_BF16;DT_BF16",
           core="AI_CORE")
ATTENTION = K("aclnnFlashAttentionScore_FlashAttentionScore_FlashAttentionScore", "FlashAttentionScore", 210.0,
              f"{X};{X};{X}", "DT_BF16;DT_BF16;DT_BF16", core="MIX_AIC")
RMSNORM = K("aclnnRmsNorm_RmsNormAiCore_RmsNorm", "RmsNorm", 14.0, f"{X};64", "DT_BF16;DT_BF16")
CHAIN = (K("aclnnNeg_NegAiCore_Neg", "Neg", 6.0, HALF), K("aclnnCat_ConcatDAiCore_ConcatD", "ConcatD", 8.0,
                                                              f"{HALF};{HALF}", "DT_BF16;DT_BF16"),
         K("aclnnMul_MulAiCore_Mul", "Mul", 7.0, f"{X};{TABLE}", "DT_BF16;DT_BF16"),
         K("aclnnMul_MulAiCore_Mul", "Mul", 7.0, f"{X};{TABLE}", "DT_BF16;DT_BF16"),
         K("aclnnAdd_AddAiCore_Add", "Add", 6.0, f"{X};{X}", "DT_BF16;DT_BF16"))
ROTARY = K("aclnnRotaryPositionEmbedding_RotaryPositionEmbeddingAiCore_RotaryPositionEmbedding",
           "RotaryPositionEmbedding", 12.0, f"{X};{TABLE};{TABLE}", "DT_BF16;DT_BF16;DT_BF16")
CAST_UP = K("aclnnInplaceCopy_CastAiCore_Cast", "Cast", 14.0, f"{X};{X}", "DT_BF16;FLOAT")
CAST_DOWN = K("aclnnInplaceCopy_CastAiCore_Cast", "Cast", 14.0, f"{X};{X}", "FLOAT;DT_BF16")
VIEW_COPY = K("aclnnInplaceCopy_ViewCopyAiCore_ViewCopy", "ViewCopy", 10.0, f"{X};{X}", "DT_BF16;DT_BF16")
TENSOR_MOVE = K("aclnnInplaceCopy_TensorMoveAiCore_TensorMove", "TensorMove", 5.0, X)

SCENARIOS = ("clean", "r1", "r2", "r3", "r4", "r5", "bookkeeping", "other_stream")


def site(scenario: str, on: bool, index: int) -> list[K]:
    """One RoPE site's kernels (after its projection)."""
    norm = [RMSNORM] if scenario == "r3" else []
    if not on or (scenario == "r4" and index % 2):  # r4: every other site falls back to the chain
        return [*norm, *CHAIN]
    if scenario == "r1":
        fused = K(ROTARY.name, ROTARY.type, 14.0, ROTARY.shapes, "FLOAT;FLOAT;FLOAT")
        return [CAST_UP, fused, CAST_DOWN]
    if scenario == "r2":
        return [VIEW_COPY, ROTARY]
    if scenario == "r3":
        return [RMSNORM, TENSOR_MOVE, ROTARY]
    if scenario == "r5":
        return [K(ROTARY.name, ROTARY.type, 40.0, ROTARY.shapes, ROTARY.dtypes)]
    return [ROTARY]


def layer(scenario: str, on: bool, number: int) -> list[K]:
    kernels: list[K] = []
    for index in range(2):
        if not (on and scenario == "bookkeeping" and index):  # the on run launches a projection less per layer
            kernels.append(MATMUL)
        kernels += site(scenario, on, 2 * number + index)
    return [*kernels, ATTENTION]


def rows(scenario: str, on: bool) -> list[str]:
    out, clock, task = [], float(EPOCH_US), 100
    for step in range(1, STEPS + 1):
        for number in range(LAYERS):
            for k in layer(scenario, on, number):
                out.append(_row(step, task, k, clock))
                if scenario == "other_stream" and on and k is ROTARY:
                    # a copy on another stream, started while the fused kernel runs: no neighbour of it
                    out.append(_row(step, task + 1, K(VIEW_COPY.name, VIEW_COPY.type, 3.0, X, stream=7), clock + 1))
                clock += k.us + 2.0
                task += 2
    return out


def _row(step: int, task: int, k: K, start: float) -> str:
    return ",".join([str(step), "0", "266", str(task), str(k.stream), k.name, k.type, "dynamic", k.core,
                     f"{start:.3f}\t", f"{k.us:.3f}", "1.000", "20", "0", "NO", f'"""{k.shapes}"""', k.dtypes,
                     ";".join(["ND"] * (k.shapes.count(";") + 1)), f'"""{X}"""', "DT_BF16", "ND", "N/A"])


def write_pair(root: Path, scenario: str) -> tuple[Path, Path]:
    """Write `root/<scenario>/off` and `.../on`, each holding a kernel_details.csv; returns (off, on)."""
    folders = []
    for side in ("off", "on"):
        folder = Path(root) / scenario / side
        folder.mkdir(parents=True, exist_ok=True)
        text = "\r\n".join([HEADER, *rows(scenario, side == "on")]) + "\r\n"
        (folder / "kernel_details.csv").write_text(text, encoding="utf-8")
        folders.append(folder)
    return folders[0], folders[1]


if __name__ == "__main__":
    for name in SCENARIOS:
        print(*write_pair(Path(sys.argv[1]), name))
