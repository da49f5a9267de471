"""Profile folders laid out as torch_npu and msprof write them, built small in each test's tmp_path:

  torch_npu  <host>_<pid>_<YYYYmmddHHMMSSmmm>_ascend_pt/profiler_info_<rank>.json
             <host>_<pid>_<YYYYmmddHHMMSSmmm>_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv
  msprof     PROF_<n>_<timestamp>_<id>/mindstudio_profiler_output/op_summary_[slice_<k>_]<timestamp>.csv
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

KERNEL_HEADER = ["Step Id", "Device_id", "Name", "Type", "Accelerator Core", "Start Time(us)", "Duration(us)",
                 "Wait Time(us)", "Block Dim"]
SUMMARY_HEADER = ["Device_id", "Model ID", "Task ID", "Stream ID", "Op Name", "OP Type", "Task Type",
                  "Task Start Time(us)", "Task Duration(us)", "Task Wait Time(us)", "Block Dim"]
EPOCH_NS = 1718873628_000000_000

COPY = ("aclnnInplaceCopy_ViewCopyAiCore_ViewCopy", "ViewCopy", "AI_VECTOR_CORE")
ATTN = ("aclnnFlashAttentionScore_FlashAttentionScore_FlashAttentionScore", "FlashAttentionScore", "MIX_AIC")
MATMUL = ("aclnnMatmul_MatMulV3Common_MatMulV3", "MatMulV3", "AI_CORE")
RMSNORM = ("aclnnRmsNorm_RmsNormAiCore_RmsNorm", "RmsNorm", "AI_VECTOR_CORE")
RSQRT = ("aclnnRsqrt_RsqrtAiCore_Rsqrt", "Rsqrt", "AI_VECTOR_CORE")
POWS = ("aclnnPowTensorScalar_PowsAiCore_Pows", "Pows", "AI_VECTOR_CORE")
MEAN = ("aclnnMean_ReduceMeanAiCore_ReduceMean", "ReduceMean", "AI_VECTOR_CORE")


@dataclass(frozen=True)
class Row:
    name: str
    op_type: str
    core: str
    dur_ns: int
    start_ns: int
    step: int | None = 1


def rows(kernels: list[tuple[str, str, str]], step: int | None = 1, dur_ns: int = 2_000, t0: int = EPOCH_NS,
         gap_ns: int = 500) -> list[Row]:
    """One row per kernel, in launch order, each `dur_ns` long; durations grow by 1 ns per row so sums differ."""
    out, t = [], t0
    for i, (name, op_type, core) in enumerate(kernels):
        out.append(Row(name, op_type, core, dur_ns + i, t, step))
        t += dur_ns + i + gap_ns
    return out


def layers(n: int, per_layer: list[tuple[str, str, str]], step: int = 1, t0: int = EPOCH_NS) -> list[Row]:
    return rows([k for _ in range(n) for k in per_layer], step=step, t0=t0)


def us(ns: int) -> str:
    return f"{ns // 1000}.{ns % 1000:03d}"


def kernel_csv(path: Path, table: list[Row], *, header: list[str] | None = None, start: str = "exact",
               untyped: bool = False) -> Path:
    """kernel_details.csv as torch_npu writes it (CRLF, a TAB after start times). `start`: "exact", "excel" (the
    scientific notation a spreadsheet saves), "tied" (one value for every row). `untyped`: Type N/A (Level0)."""
    header = header or KERNEL_HEADER
    lines = [",".join(header)]
    for r in table:
        cells = {"Step Id": "N/A" if r.step is None else str(r.step), "Device_id": "0", "Name": r.name,
                 "Type": "N/A" if untyped else r.op_type, "Accelerator Core": r.core, "Duration(us)": us(r.dur_ns),
                 "Wait Time(us)": "0.120", "Block Dim": "8", "Model ID": "1", "Task ID": "7", "Stream ID": "2"}
        start_cell = {"exact": us(r.start_ns) + "\t", "excel": f"{r.start_ns / 1000:.5E}",
                      "tied": us(EPOCH_NS) + "\t"}[start]
        for spelling in ("Start Time(us)", "Task Start Time(us)", "Task Start Time"):
            cells[spelling] = start_cell
        for spelling, canonical in (("Op Name", "Name"), ("OP Type", "Type"), ("Task Type", "Accelerator Core"),
                                    ("Task Duration(us)", "Duration(us)"), ("Task Wait Time(us)", "Wait Time(us)")):
            cells[spelling] = cells[canonical]
        lines.append(",".join(cells[h] for h in header))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(("\r\n".join(lines) + "\r\n").encode())
    return path


def torch_npu_session(root: Path, *, rank: int | None, timestamp: str, table: list[Row] | None, host: str = "node0",
                      pid: int = 4100, level: str = "Level1", untyped: bool = False, start: str = "exact",
                      header: list[str] | None = None) -> Path:
    """One rank's session folder; `table=None` leaves ASCEND_PROFILER_OUTPUT/ without kernel_details.csv (a rank
    whose profile was not exported)."""
    run = root / f"{host}_{pid}_{timestamp}_ascend_pt"
    output = run / "ASCEND_PROFILER_OUTPUT"
    output.mkdir(parents=True)
    info = {"config": {"common_config": {"activities": ["ProfilerActivity.CPU", "ProfilerActivity.NPU"]},
                       "experimental_config": {"_profiler_level": level, "_export_type": ["text"]}},
            "start_info": {"syscnt_enable": True, "freq": 100, "start_cnt": 1, "start_monotonic": 2},
            "end_info": {"collectionTimeEnd": EPOCH_NS, "MonotonicTimeEnd": 3}, "torch_npu_version": "2.9.0"}
    if rank is not None:
        info["rank_id"] = rank
    name = f"profiler_info_{rank}.json" if rank is not None else "profiler_info.json"
    (run / name).write_text(json.dumps(info, indent=4), encoding="utf-8")
    if table is not None:
        kernel_csv(output / "kernel_details.csv", table, untyped=untyped, start=start, header=header)
    return run


def msprof_export(root: Path, slices: list[list[Row]], *, timestamp: str = "20260105101010",
                  header: list[str] | None = None) -> Path:
    """msprof's PROF_ folder: one op_summary file, or op_summary_slice_<k>_<timestamp>.csv when cut by size."""
    out = root / f"PROF_000001_{timestamp}123_QWERTYABCDEF" / "mindstudio_profiler_output"
    for k, table in enumerate(slices):
        name = f"op_summary_slice_{k}_{timestamp}.csv" if len(slices) > 1 else f"op_summary_{timestamp}.csv"
        kernel_csv(out / name, table, header=header or SUMMARY_HEADER)
    return out.parent
