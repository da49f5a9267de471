"""Writes the profiler-format fixture files under tests/profiles/data/ (committed; rerun to regenerate).

Each variant is an eager/compile pair of torch_npu-shaped output for a small three-layer model over two steps,
written in one header variant of kernel_details.csv with that variant's cell quirks (BOM, CRLF, trailing TAB in
start times, quoted start times and shapes, N/A). The compiled run fuses RMSNorm and inflates the copies.

    python tests/profiles/make_fixtures.py
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
EPOCH_US = 1718873628_000000  # an epoch in microseconds, as the profiler writes it

# (Name, Type, Accelerator Core) per kernel; counts per layer
EAGER_LAYER = [
    ("aclnnMatmul_MatMulV3Common_MatMulV3", "MatMulV3", "AI_CORE", 2),
    ("aclnnPowTensorScalar_PowsAiCore_Pows", "Pows", "AI_VECTOR_CORE", 1),
    ("aclnnMean_ReduceMeanAiCore_ReduceMean", "ReduceMean", "AI_VECTOR_CORE", 1),
    ("aclnnAdds_AddsAiCore_Adds", "Adds", "AI_VECTOR_CORE", 1),
    ("aclnnRsqrt_RsqrtAiCore_Rsqrt", "Rsqrt", "AI_VECTOR_CORE", 1),
    ("aclnnMul_MulAiCore_Mul", "Mul", "AI_VECTOR_CORE", 2),
    ("aclnnCast_CastAiCore_Cast", "Cast", "AI_VECTOR_CORE", 1),
    ("aclnnFlashAttentionScore_FlashAttentionScore_FlashAttentionScore", "FlashAttentionScore", "MIX_AIC", 1),
    ("aclnnInplaceCopy_TensorMoveAiCore_TensorMove", "TensorMove", "AI_VECTOR_CORE", 1),
    ("aclnnInplaceCopy_ViewCopyAiCore_ViewCopy", "ViewCopy", "AI_VECTOR_CORE", 1),
    ("aclnnNeg_NegAiCore_Neg", "Neg", "AI_VECTOR_CORE", 1),
    ("aclnnGelu_GeluAiCore_Gelu", "Gelu", "AI_VECTOR_CORE", 1),
]
COMPILE_LAYER = [
    ("aclnnMatmul_MatMulV3Common_MatMulV3", "MatMulV3", "AI_CORE", 2),
    ("aclnnRmsNorm_RmsNormAiCore_RmsNorm", "RmsNorm", "AI_VECTOR_CORE", 1),
    ("aclnnFlashAttentionScore_FlashAttentionScore_FlashAttentionScore", "FlashAttentionScore", "MIX_AIC", 1),
    ("aclnnInplaceCopy_TensorMoveAiCore_TensorMove", "TensorMove", "AI_VECTOR_CORE", 2),
    ("aclnnInplaceCopy_ViewCopyAiCore_ViewCopy", "ViewCopy", "AI_VECTOR_CORE", 3),
    ("aclnnInplaceCopy_CastAiCore_Cast", "Cast", "AI_VECTOR_CORE", 1),
    ("aclnnStridedSliceV2_StridedSliceAiCore_StridedSlice", "StridedSlice", "AI_VECTOR_CORE", 1),
    ("aclnnMul_MulAiCore_Mul", "Mul", "AI_VECTOR_CORE", 1),
    ("aclnnNeg_NegAiCore_Neg", "Neg", "AI_VECTOR_CORE", 1),
    ("aclnnGelu_GeluAiCore_Gelu", "Gelu", "AI_VECTOR_CORE", 1),
]
PER_STEP = {  # once per step, outside the layers (before the first attention)
    "eager": [("aclnnTransData_TransDataAiCore_TransData", "TransData", "AI_CORE", 1)],
    "compile": [("aclnnTransData_TransDataAiCore_TransData", "TransData", "AI_CORE", 1),
                ("aclnnIndexPutImpl_IndexPutAiCpu_IndexPut", "IndexPut", "AI_CPU", 1),
                ("LayerNorm90", "LayerNorm", "AI_VECTOR_CORE", 1)],
}
LAYERS, STEPS = 3, (1, 2)

# Raw cells: the profiler quotes shape lists and keeps literal quotes inside (they survive CSV parsing).
SHAPES = {"Input Shapes": '"""81920,4096;8192,512"""', "Input Data Types": "DT_BF16;DT_BF16",
          "Input Formats": "ND;ND", "Output Shapes": '"""81920,4096"""', "Output Data Types": "DT_BF16",
          "Output Formats": "ND"}
METRICS = ["aicore_time(us)", "aic_total_cycles", "aic_mac_time(us)", "aic_mac_ratio", "aic_scalar_time(us)",
           "aic_scalar_ratio", "aic_mte1_time(us)", "aic_mte1_ratio", "aic_mte2_time(us)", "aic_mte2_ratio",
           "aic_fixpipe_time(us)", "aic_fixpipe_ratio", "aic_icache_miss_rate", "aiv_time(us)", "aiv_total_cycles",
           "aiv_vec_time(us)", "aiv_vec_ratio", "aiv_scalar_time(us)", "aiv_scalar_ratio", "aiv_mte2_time(us)",
           "aiv_mte2_ratio", "aiv_mte3_time(us)", "aiv_mte3_ratio", "aiv_icache_miss_rate"]
FULL = (["Step Id", "Device_id", "Model ID", "Task ID", "Stream ID", "Name", "Type", "OP State", "Accelerator Core",
         "Start Time(us)", "Duration(us)", "Wait Time(us)", "Block Num", "Mix Block Num", "HF32 Eligible",
         *SHAPES, "Context ID", *METRICS])
FULL_OLD = (["Model ID", "Task ID", "Stream ID", "Name", "Type", "Accelerator Core", "Start Time(us)",
             "Duration(us)", "Wait Time(us)", "Block Dim", "Mix Block Dim", *SHAPES, "Context ID", *METRICS[:13]])
LEVEL0 = ["Name", "Type", "Accelerator Core", "Start Time(us)", "Duration(us)", "Wait Time(us)", "Block Dim"]

# variant -> (header, layout, options)
VARIANTS = {
    "level0_short": (LEVEL0, "file", dict(bom=False, crlf=True, na_types=True, quote_start=False)),
    "level0_device_blocknum": (["Device_id", *LEVEL0[:-1], "Block Num"], "output_dir",
                               dict(bom=True, crlf=True, na_types=True, quote_start=True)),
    "level0_shapes": (["Device_id", *LEVEL0, *SHAPES], "run_dir", dict(bom=False, crlf=True, na_types=False,
                                                                        quote_start=False)),
    "full_step": (FULL, "run_dir", dict(bom=False, crlf=True, na_types=False, quote_start=True, shuffle=True)),
    "full_old": (FULL_OLD, "run_dir", dict(bom=True, crlf=False, na_types=False, quote_start=False)),
    "op_summary": (["Device_id", "Op Name", "OP Type", "Task Type", "Task Start Time(us)", "Task Duration(us)",
                    "Task Wait Time(us)", "Block Num", "Mix Block Num", "Input Shapes", "Output Shapes"], "file",
                   dict(bom=False, crlf=False, na_types=False, quote_start=False, na_duration=True)),
    "multi_rank": (FULL, "ranks", dict(bom=False, crlf=True, na_types=False, quote_start=False)),
}
CANON = {"Op Name": "Name", "OP Type": "Type", "Task Type": "Accelerator Core",
         "Task Start Time(us)": "Start Time(us)", "Task Duration(us)": "Duration(us)",
         "Task Wait Time(us)": "Wait Time(us)"}


def kernels(side: str, rng: random.Random) -> list[dict]:
    rows, t = [], EPOCH_US * 1000  # ns
    for step in STEPS:
        sequence = list(PER_STEP[side])
        for _ in range(LAYERS):
            sequence += EAGER_LAYER if side == "eager" else COMPILE_LAYER
        for name, op_type, core, n in sequence:
            for _ in range(n):
                dur_ns = rng.randint(1_000, 90_000)
                rows.append(dict(step=step, name=name, type=op_type, core=core, start_ns=t, dur_ns=dur_ns))
                t += dur_ns + rng.randint(100, 3_000)
    return rows


def us(ns: int) -> str:
    return f"{ns // 1000}.{ns % 1000:03d}"


def render(header: list[str], rows: list[dict], opts: dict, rng: random.Random, device: int) -> str:
    lines = [",".join(header)]
    for i, r in enumerate(rows):
        na_type = opts["na_types"] and (i % 3 == 0)
        start = us(r["start_ns"]) + "\t"
        cells = []
        for col in header:
            key = CANON.get(col, col)
            if key == "Name":
                cells.append(r["name"])
            elif key == "Type":
                cells.append("N/A" if na_type else r["type"])
            elif key == "Accelerator Core":
                cells.append("N/A" if na_type else r["core"])
            elif key == "Start Time(us)":
                cells.append(f'"{start}"' if opts["quote_start"] else start)
            elif key == "Duration(us)":
                cells.append("N/A" if opts.get("na_duration") and i == 5 else us(r["dur_ns"]))
            elif key == "Wait Time(us)":
                cells.append(f"{rng.randint(0, 5000) / 1000:.3f}")
            elif key == "Step Id":
                cells.append(str(r["step"]))
            elif key == "Device_id":
                cells.append(str(device))
            elif key in SHAPES:
                cells.append(SHAPES[key])
            elif key in ("Model ID", "Task ID", "Stream ID", "Context ID"):
                cells.append("N/A" if key == "Context ID" else str(rng.randint(1, 4000)))
            elif key == "OP State":
                cells.append("dynamic")
            elif key == "HF32 Eligible":
                cells.append("NO")
            elif key in ("Block Dim", "Block Num", "Mix Block Dim", "Mix Block Num"):
                cells.append(str(rng.choice([8, 20, 40])))
            else:
                cells.append(f"{rng.random() * 100:.3f}")
        lines.append(",".join(cells))
    if opts.get("shuffle"):
        body = lines[1:]
        rng.shuffle(body)
        lines = lines[:1] + body
    eol = "\r\n" if opts["crlf"] else "\n"
    return ("\ufeff" if opts["bom"] else "") + eol.join(lines) + eol


def write(variant: str) -> None:
    header, layout, opts = VARIANTS[variant]
    for side_index, side in enumerate(("eager", "compile")):
        root = DATA / variant / side
        rank_count = 2 if layout == "ranks" else 1
        for rank in range(rank_count):
            rng = random.Random(f"{variant}/{side}/{rank}")
            text = render(header, kernels(side, rng), opts, rng, device=rank)
            run = root / f"worker{rank}_{4100 + 10 * side_index + rank}_2025060110101{rank}123_ascend_pt"
            if layout == "file":
                name = "op_summary_20250601101010.csv" if variant == "op_summary" else "kernel_details.csv"
                path = root / name
            elif layout == "output_dir":
                path = root / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
            else:
                path = run / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text.encode("utf-8"))


def main() -> None:
    for variant in VARIANTS:
        shutil.rmtree(DATA / variant, ignore_errors=True)
        write(variant)
    print(f"wrote {len(VARIANTS)} eager/compile pairs under {DATA}")


if __name__ == "__main__":
    main()
