"""`sdcompile matrix`: the fusion-coverage table measured — `sdcompile run` for every model and op (or one shard of
them), cells run side by side in `jobs` processes, each cell in its own folder (matrix/cells/<model>-<op>) with its
own workspace and scratch copy of the target, and its report."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from sdcompile._version import __version__
from sdcompile.core.environment import collect_versions
from sdcompile.core.target.discovery import TargetTree, find_target
from sdcompile.core.target.package_cache import DEFAULT_VERSION, ensure_unpacked
from sdcompile.lifecycle.matrix.cells import plan, shard_of
from sdcompile.lifecycle.matrix.outcomes import torch_range
from sdcompile.lifecycle.matrix.results import Cell, MatrixReport
from sdcompile.lifecycle.matrix.run_cell import RUN, cell_folder, check_cell_folder, run_cell, stop_running_cells
from sdcompile.lifecycle.state import tree_hash
from sdcompile.util.errors import BadInput


def run_matrix(models: tuple[str, ...], ops: tuple[str, ...], folder: Path, *, jobs: int = 1,
               shard: tuple[int, int] | None = None, cell_timeout: float | None = None, repo: Path | None = None,
               until: str = RUN, progress: Callable[[str], None] = lambda _: None) -> MatrixReport:
    """Every cell of models x ops (or the shard's), `jobs` at a time; a cell that crashes or times out is a cell with
    that outcome. `repo`: a MindIE-SD tree of the user's, copied for each cell (default: the release, as `run`
    takes it). `until`: RUN (the whole lifecycle per cell) or SCAFFOLD (its dry run only: the guides' tables)."""
    if jobs < 1:
        raise BadInput(f"--jobs {jobs} runs no cell", "give 1 or more (at most the machine's cores is sensible)")
    tree = find_target(repo) if repo is not None else None
    cells = shard_of(plan(models, ops), shard)
    versions = collect_versions(None)
    torch_version = versions.torch_version or "not installed"
    done: list[Cell | None] = [None] * len(cells)
    total = len(cells)

    def one(index: int) -> Cell:
        model, op = cells[index]
        progress(f"[{index + 1}/{total}] running {model} × {op}{' (scaffold --dry-run)' if until != RUN else ''}")
        return run_cell(folder, model, op, cell_timeout, torch_version, tree.root if tree else None, until)

    for model, op in cells:  # before any work: a folder of the user's in the way is bad input, not a cell
        check_cell_folder(cell_folder(folder, model, op))
    pool = ThreadPoolExecutor(max_workers=jobs)
    try:
        futures = {pool.submit(one, i): i for i in range(total)}
        for finished, future in enumerate(as_completed(futures), start=1):
            cell = done[futures[future]] = future.result()
            progress(f"[{finished}/{total} done] {cell.model} × {cell.op}: {cell.outcome} ({cell.seconds:g} s)")
    except BaseException:  # Ctrl-C included: the cells run in sessions of their own, so end them here
        pool.shutdown(wait=False, cancel_futures=True)
        stop_running_cells()
        raise
    pool.shutdown()
    return MatrixReport(cells=tuple(c for c in done if c is not None), models=models, ops=ops,
                        shard=f"{shard[0]}/{shard[1]}" if shard else "", target=target_identity(tree),
                        sdcompile=__version__, until=until,
                        torch_states=((torch_version, torch_range()),) if versions.torch_version else (),
                        folder=str(folder), versions=versions)


def target_identity(tree: TargetTree | None) -> str:
    """The target every cell compiled through, by its version and a hash of its compilation sources: two shards
    that name the same identity measured the same code, wherever it was checked out."""
    if tree is None:
        root = ensure_unpacked(DEFAULT_VERSION)
        return f"MindIE-SD {DEFAULT_VERSION} release (sources {tree_hash(root / 'mindiesd' / 'compilation')})"
    return f"MindIE-SD {tree.version} tree (sources {tree_hash(tree.compilation)})"
