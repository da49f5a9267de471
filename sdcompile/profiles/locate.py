"""Find the kernel CSV of each rank from what the user passed: a CSV file, an ASCEND_PROFILER_OUTPUT/ folder,
a `*_ascend_pt/` folder, or a parent folder holding one `*_ascend_pt/` folder per rank."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from sdcompile.errors import BadInput

KERNEL_FILE = "kernel_details.csv"
OUTPUT_DIR = "ASCEND_PROFILER_OUTPUT"
OP_SUMMARY_GLOB = "op_summary*.csv"
RUN_SUFFIX = "_ascend_pt"
# Written by `sdcompile profile` into a CPU-captured run folder; its presence labels the profile as CPU-made.
CAPTURE_INFO = "sdcompile_capture.json"


@dataclass(frozen=True)
class RankFile:
    label: str  # the run folder's name (one per rank), or the file name for a bare CSV
    path: Path
    capture: dict | None  # the capture info of a CPU profile written by `sdcompile profile`, else None


def locate(path: Path | str) -> tuple[RankFile, ...]:
    """Every rank's kernel CSV under `path`, sorted by rank label."""
    path = Path(path)
    if not path.exists():
        raise BadInput(f"{path} does not exist", "pass a kernel_details.csv or a torch_npu profiler output folder")
    if path.is_file():
        return (_rank(path, path.name),)
    direct = [path / KERNEL_FILE, path / OUTPUT_DIR / KERNEL_FILE]
    for candidate in direct:
        if candidate.is_file():
            return (_rank(candidate, _label_for(candidate)),)
    found = sorted(p for p in path.rglob(KERNEL_FILE) if p.parent.name == OUTPUT_DIR)
    if not found:  # msprof's own export: one op_summary_<timestamp>.csv per device
        found = sorted(path.rglob(OP_SUMMARY_GLOB))
    if not found:
        raise BadInput(
            f"no {OUTPUT_DIR}/{KERNEL_FILE} under {path}",
            f"pass a {KERNEL_FILE}, an {OUTPUT_DIR}/ folder, a *{RUN_SUFFIX}/ folder or a folder of them "
            "(profile with torch_npu.profiler and export_type text)",
        )
    ranks = [_rank(p, _label_for(p)) for p in found]
    labels = [r.label for r in ranks]
    if len(set(labels)) != len(labels):  # nested layouts may repeat run-folder names: fall back to relative paths
        ranks = [_rank(r.path, str(r.path.parent.parent.relative_to(path))) for r in ranks]
    return tuple(sorted(ranks, key=lambda r: r.label))


def _label_for(csv_path: Path) -> str:
    if csv_path.name != KERNEL_FILE:
        return csv_path.name
    run_dir = csv_path.parent.parent if csv_path.parent.name == OUTPUT_DIR else csv_path.parent
    return run_dir.name


def _rank(csv_path: Path, label: str) -> RankFile:
    run_dir = csv_path.parent.parent if csv_path.parent.name == OUTPUT_DIR else csv_path.parent
    info_path = run_dir / CAPTURE_INFO
    capture = None
    if info_path.is_file():
        try:
            capture = json.loads(info_path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise BadInput(f"{info_path} is not valid JSON ({exc})", "re-run `sdcompile profile` or delete it") from exc
    return RankFile(label, csv_path, capture)
