"""Find the kernel CSV of each rank from what the user passed: a CSV file, an ASCEND_PROFILER_OUTPUT/ folder,
a `*_ascend_pt/` folder, a parent folder holding one `*_ascend_pt/` folder per rank (and session), or msprof's
`PROF_*/mindstudio_profiler_output/op_summary_*.csv` (its `op_summary_slice_<n>_*` files are one rank).

torch_npu names each session `<host>_<pid>_<timestamp>_ascend_pt` and writes `profiler_info_<rank>.json` in it
(`profiler_info.json` without torch.distributed): two sessions of one rank are one rank profiled twice, not two
ranks, so they are refused unless --session or --rank picks one."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path

from sdcompile.util.errors import BadInput

KERNEL_FILE = "kernel_details.csv"
OUTPUT_DIR = "ASCEND_PROFILER_OUTPUT"
OP_SUMMARY_GLOB = "op_summary*.csv"
RUN_SUFFIX = "_ascend_pt"
INFO_GLOB = "profiler_info*.json"
LATEST = "latest"
# Written by `sdcompile profile` into a CPU-captured run folder; its presence labels the profile as CPU-made.
CAPTURE_INFO = "sdcompile_capture.json"
# beside it in a profile of a forward sdcompile compiled (CPU or NPU): the fused calls its graphs made per step and,
# on CPU, the graph node (and model line) each kernel row ran as (core/profiles/graph_sites.py)
GRAPH_NODES = "sdcompile_graph_nodes.json"
# `sdcompile profile` builds each run folder under STAGING_PREFIX in the same parent, writes COMPLETE_MARKER in it
# last and renames it into place (capture.staged_run_folder): a staging folder is a profile cut short, never a rank.
STAGING_PREFIX = ".sdcompile-staging-"
COMPLETE_MARKER = ".sdcompile-complete"
_RUN_NAME = re.compile(r"^(?P<worker>.+)_(?P<pid>\d+)_(?P<timestamp>\d{14,17})" + RUN_SUFFIX + "$")
_SLICE = re.compile(r"^(?P<stem>.+)_slice_(?P<index>\d+)(?P<rest>_[^/]*)?\.csv$")
_LEVEL = re.compile(r"Level(\d|_none)", re.IGNORECASE)


@dataclass(frozen=True)
class RunInfo:
    """What the profiler wrote beside the data: profiler_info*.json and the session folder's name."""

    info_file: str | None = None
    rank_id: int | None = None  # from profiler_info_<rank>.json ("rank_id", else the file name)
    session: str | None = None  # the session folder's timestamp (YYYYmmddHHMMSSmmm)
    level: str | None = None  # experimental_config._profiler_level: "Level0", "Level1", "Level2"


@dataclass(frozen=True)
class RankFile:
    label: str  # the run folder's name (one per rank), or the file name for a bare CSV
    path: Path  # the first (or only) file
    capture: dict | None  # the capture info of a CPU profile written by `sdcompile profile`, else None
    run: RunInfo = RunInfo()
    slices: tuple[Path, ...] = ()  # msprof op_summary_slice_<n> files of this rank, in slice order

    @property
    def files(self) -> tuple[Path, ...]:
        return self.slices or (self.path,)

    @property
    def run_dir(self) -> Path:
        return _run_dir(self.path)


@dataclass(frozen=True)
class MissingRank:
    """A run folder under the path that holds no kernel data: the profile is not every rank of the run."""

    path: str
    rank_id: int | None


@dataclass(frozen=True)
class LeftOut:
    """A session of a rank that --session or --rank did not pick."""

    path: str
    rank_id: int | None
    session: str | None
    why: str  # "--rank" or "--session"


@dataclass(frozen=True)
class Located:
    ranks: tuple[RankFile, ...]
    missing: tuple[MissingRank, ...]
    left_out: tuple[LeftOut, ...]


def locate(path: Path | str, session: tuple[str, ...] = (), rank: int | None = None) -> Located:
    """Every rank's kernel CSV under `path`, sorted by label; `session` values pick among several sessions of one
    rank ("latest" or a timestamp prefix), `rank` keeps one rank id."""
    path = Path(path)
    _check_entry(path)
    if not path.exists():
        raise BadInput(f"{path} does not exist", "pass a kernel_details.csv or a torch_npu profiler output folder")
    if path.is_file():
        return _select((_rank((path,), path.name),), (), session, rank)
    for candidate in (path / KERNEL_FILE, path / OUTPUT_DIR / KERNEL_FILE):
        _check_entry(candidate)
        if candidate.is_file():
            return _select((_rank((candidate,), _label_for(candidate)),), (), session, rank)
    run_dirs = [d for d in _run_dirs(path) if not _staged(d, path)]
    for d in run_dirs:  # rglob skips broken symlinks: look where each run folder's kernel file belongs
        _check_entry(d / OUTPUT_DIR / KERNEL_FILE)
    found = sorted(p for p in path.rglob(KERNEL_FILE) if p.parent.name == OUTPUT_DIR and not _staged(p, path))
    for p in found:
        _check_entry(p)
    if found:
        ranks = _dedupe([_rank((p,), _label_for(p)) for p in found], path)
        have = {_run_dir(p) for p in found}
        missing = tuple(MissingRank(str(d), _read_info(d).rank_id) for d in run_dirs if d not in have)
        return _select(ranks, missing, session, rank)
    # msprof's own export: op_summary_<timestamp>.csv per device
    summaries = sorted(p for p in path.rglob(OP_SUMMARY_GLOB) if not _staged(p, path))
    for p in summaries:
        _check_entry(p)
    if not summaries:
        raise BadInput(
            f"no {OUTPUT_DIR}/{KERNEL_FILE} under {path}",
            f"pass a {KERNEL_FILE}, an {OUTPUT_DIR}/ folder, a *{RUN_SUFFIX}/ folder or a folder of them "
            "(profile with torch_npu.profiler and export_type text)",
        )
    return _select(_dedupe([_rank(files, _summary_label(files[0])) for files in _slice_groups(summaries)], path),
                   (), session, rank)


def run_folders(folder: Path) -> list[Path]:
    """The `*_ascend_pt` folders directly in `folder`, sorted; staging folders (profiles cut short) are not."""
    if not Path(folder).is_dir():
        return []
    return sorted(p for p in Path(folder).glob(f"*{RUN_SUFFIX}") if not p.name.startswith(STAGING_PREFIX))


def written_by_sdcompile(run_dir: Path) -> bool:
    """A run folder `sdcompile profile` finished: its completion marker, or the capture note (written last by
    sdcompile versions before the marker)."""
    return (run_dir / COMPLETE_MARKER).is_file() or (run_dir / CAPTURE_INFO).is_file()


def _staged(p: Path, root: Path) -> bool:
    """`p` is inside a staging folder under `root` (a profile sdcompile did not finish writing)."""
    return any(part.startswith(STAGING_PREFIX) for part in p.relative_to(root).parts)


def _check_entry(p: Path) -> None:
    """A kernel file that is a folder or a broken symlink is the user's mistake: say which."""
    if p.is_symlink() and not p.exists():
        raise BadInput(f"{p} is a broken symlink (to {p.readlink()})", "point it at the kernel CSV or remove it")
    if p.name.endswith(".csv") and p.is_dir():
        raise BadInput(f"{p} is a directory, not a CSV file", "pass the profiler's kernel_details.csv file itself")


def _run_dir(csv_path: Path) -> Path:
    return csv_path.parent.parent if csv_path.parent.name == OUTPUT_DIR else csv_path.parent


def _label_for(csv_path: Path) -> str:
    return _run_dir(csv_path).name if csv_path.name == KERNEL_FILE else csv_path.name


def _summary_label(csv_path: Path) -> str:
    prof = next((a.name for a in csv_path.parents if a.name.startswith("PROF_")), None)
    m = _SLICE.match(csv_path.name)
    name = f"{m['stem']}{m['rest'] or ''}.csv" if m else csv_path.name
    return f"{prof}/{name}" if prof else name


def _slice_groups(files: list[Path]) -> list[tuple[Path, ...]]:
    """op_summary_slice_0_T.csv, op_summary_slice_1_T.csv, ... of one folder are one device's rows, cut by size."""
    groups: dict[tuple, list[tuple[int, Path]]] = defaultdict(list)
    for f in files:
        m = _SLICE.match(f.name)
        key = (f.parent, m["stem"], m["rest"]) if m else (f.parent, f.name, None)
        groups[key].append((int(m["index"]) if m else 0, f))
    return [tuple(f for _, f in sorted(members)) for _, members in sorted(groups.items(), key=lambda kv: str(kv[0]))]


def _dedupe(ranks: list[RankFile], root: Path) -> tuple[RankFile, ...]:
    labels = [r.label for r in ranks]
    if len(set(labels)) != len(labels):  # nested layouts may repeat run-folder names: fall back to relative paths
        ranks = [replace(r, label=str(_run_dir(r.path).relative_to(root)) if r.path.name == KERNEL_FILE
                         else str(r.path.relative_to(root))) for r in ranks]
    return tuple(sorted(ranks, key=lambda r: r.label))


def _run_dirs(root: Path) -> list[Path]:
    """Folders the profiler made for one rank's session: `*_ascend_pt`, or any holding a profiler_info*.json."""
    dirs = {d for d in ([root] + list(root.rglob(f"*{RUN_SUFFIX}"))) if d.is_dir() and d.name.endswith(RUN_SUFFIX)}
    dirs |= {p.parent for p in root.rglob(INFO_GLOB)}
    return sorted(dirs)


def _read_info(run_dir: Path) -> RunInfo:
    m = _RUN_NAME.match(run_dir.name)
    session = m["timestamp"] if m else None
    infos = sorted(run_dir.glob(INFO_GLOB))
    if not infos:
        return RunInfo(session=session)
    info_path = infos[0]
    try:
        doc = json.loads(info_path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadInput(f"{info_path} is not valid JSON ({exc})", "restore the file the profiler wrote") from exc
    rank_id = doc.get("rank_id") if isinstance(doc, dict) else None
    if not isinstance(rank_id, int):
        from_name = re.fullmatch(r"profiler_info_(\d+)\.json", info_path.name)
        rank_id = int(from_name[1]) if from_name else None
    config = doc.get("config", {}) if isinstance(doc, dict) else {}
    experimental = config.get("experimental_config") if isinstance(config, dict) else None
    level_text = str(experimental.get("_profiler_level", "")) if isinstance(experimental, dict) else ""
    level = _LEVEL.search(level_text)
    return RunInfo(str(info_path), rank_id, session, f"Level{level[1]}" if level else None)


def _rank(files: tuple[Path, ...], label: str) -> RankFile:
    run_dir = _run_dir(files[0])
    info_path = run_dir / CAPTURE_INFO
    capture = read_capture_note(info_path) if info_path.is_file() else None
    run = _read_info(run_dir) if files[0].name == KERNEL_FILE else RunInfo()
    return RankFile(label, files[0], capture, run, files if len(files) > 1 else ())


# The fields `sdcompile profile` writes in CAPTURE_INFO and their JSON types. Each is optional (a folder labelled
# by hand may name only its source: the defaults are "cpu capture" and "cpu"); fields not listed are kept unread.
CAPTURE_FIELDS: dict[str, str] = {
    "source": "string", "device": "string", "model": "string", "mode": "string", "dtype": "string",
    "torch": "string", "backend": "string", "target": "string", "note": "string", "steps": "integer",
    "rows": "integer", "pattern_hits": "integer or null", "pass_log_counts": "list of integers",
}
_CAPTURE_FIX = "re-run `sdcompile profile` into an empty --out folder, or delete the file (it labels a CPU profile)"


def read_capture_note(info_path: Path) -> dict:
    """CAPTURE_INFO as a dict whose listed fields have their types: a file of another shape is the user's to fix
    (exit 2 naming the file and the field), never a KeyError later."""
    try:
        doc = json.loads(info_path.read_text(encoding="utf-8"))
    except ValueError as exc:  # UnicodeDecodeError included
        raise BadInput(f"{info_path} is not valid JSON ({exc})", _CAPTURE_FIX) from exc
    except OSError as exc:
        raise BadInput(f"{info_path} cannot be read ({exc.strerror or exc})", _CAPTURE_FIX) from exc
    if not isinstance(doc, dict):
        raise BadInput(f"{info_path} holds {_json_kind(doc)}, not an object of capture fields", _CAPTURE_FIX)
    for name, expected in CAPTURE_FIELDS.items():
        if name in doc and not _has_type(doc[name], expected):
            raise BadInput(f"{info_path}: field {name!r} is {_json_kind(doc[name])}, expected {expected}",
                           _CAPTURE_FIX)
    return doc


def _has_type(value: object, expected: str) -> bool:
    def integer(v: object) -> bool:
        return isinstance(v, int) and not isinstance(v, bool)

    if expected == "string":
        return isinstance(value, str)
    if expected == "integer":
        return integer(value)
    if expected == "integer or null":
        return value is None or integer(value)
    return isinstance(value, list) and all(integer(v) for v in value)  # "list of integers"


def _json_kind(value: object) -> str:
    kinds = ((bool, "a boolean"), (int, "an integer"), (float, "a number"), (str, "a string"), (list, "a list"),
             (dict, "an object"))
    return "null" if value is None else next((k for t, k in kinds if isinstance(value, t)), type(value).__name__)


def _identity(r: RankFile) -> object:
    """What makes two run folders the same rank: the rank id, or one process's profiler_info.json without one."""
    if r.run.rank_id is not None:
        return r.run.rank_id
    return "single process" if r.run.info_file else ("folder", r.label)


def _select(ranks: tuple[RankFile, ...], missing: tuple[MissingRank, ...], session: tuple[str, ...],
            rank: int | None) -> Located:
    left: list[LeftOut] = []
    if rank is not None:
        ids = sorted({r.run.rank_id for r in ranks if r.run.rank_id is not None})
        if not ids:
            raise BadInput(f"--rank {rank}: no profiler_info_<rank>.json beside the data, so ranks are unknown",
                           "drop --rank, or pass the rank's own *_ascend_pt folder")
        if rank not in ids:
            raise BadInput(f"--rank {rank} is not in the profile; ranks present: {compact_ranges(ids)}",
                           "pick one of them")
        left += [LeftOut(str(r.path), r.run.rank_id, r.run.session, "--rank") for r in ranks if r.run.rank_id != rank]
        ranks = tuple(r for r in ranks if r.run.rank_id == rank)
    by_identity: dict[object, list[RankFile]] = defaultdict(list)
    for r in ranks:
        by_identity[_identity(r)].append(r)
    kept: list[RankFile] = []
    for identity, group in by_identity.items():
        chosen = group if len(group) == 1 else _choose(identity, group, session)
        kept += chosen
        left += [LeftOut(str(r.path), r.run.rank_id, r.run.session, "--session") for r in group if r not in chosen]
    return Located(tuple(sorted(kept, key=lambda r: r.label)), missing, tuple(left))


def _choose(identity: object, group: list[RankFile], session: tuple[str, ...]) -> list[RankFile]:
    stamps = [v for v in session if v != LATEST]
    picked = [r for r in group if r.run.session and any(r.run.session.startswith(v) for v in stamps)]
    if len(picked) == 1:
        return picked
    if LATEST in session and not picked:
        return [max(group, key=lambda r: (r.run.session or "", r.label))]
    who = f"rank {identity}" if isinstance(identity, int) else "one process (profiler_info.json, no rank id)"
    listed = "; ".join(f"{r.run.session or '?'} ({r.label})" for r in sorted(group, key=lambda r: r.label))
    why = (f"--session {' '.join(session)} matches {len(picked)} of them" if session
           else f"{len(group)} profiling sessions")
    raise BadInput(f"{who} has {why}: {listed}",
                   "pick one with --session latest or --session TIMESTAMP (or --rank N for one rank), "
                   "or pass that session's *_ascend_pt folder")


def compact_ranges(values: list[int]) -> str:
    """1-5, 7, 9-12: a compact list of integers for messages (steps, ranks)."""
    spans: list[list[int]] = []
    for v in sorted(set(values)):
        if spans and v == spans[-1][1] + 1:
            spans[-1][1] = v
        else:
            spans.append([v, v])
    parts = [str(a) if a == b else f"{a}-{b}" for a, b in spans]
    return ", ".join(parts[:8]) + (f", ... ({len(parts) - 8} more spans)" if len(parts) > 8 else "")
