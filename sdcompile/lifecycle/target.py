"""The tree `sdcompile run` acts on: the user's `--repo`, or a scratch copy of the real MindIE-SD release kept in
the pair's run folder (`<pair>/run/mindiesd-<ver>/`) so that later runs resume on the same tree.

The scratch copy is built under a staging name beside it (`.mindiesd-<ver>.staging-<pid>`), gets its completion
marker last and is renamed into place; a copy it replaces is renamed aside first (`.mindiesd-<ver>.old-<pid>`) and
removed after. A run holds the pair's lock (workspace.locks) while it does this, so a staging or old copy it finds
was left by a run that was killed: it is removed. A copy without the marker is remade, unless an older sdcompile made
it completely (it holds every file of the release: it is then marked and kept).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sdcompile.core.target.discovery import find_target
from sdcompile.core.target.package_cache import DEFAULT_VERSION, ensure_unpacked, scratch_copy
from sdcompile.util.fsutil import atomic_write_text

SCRATCH_MARKER = ".sdcompile-scratch-complete"
# Called with "copied" once the scratch copy is complete under its staging name, before it is renamed into place;
# tests set it to interrupt a run at that point.
step_hook: Callable[[str], None] | None = None


@dataclass(frozen=True)
class RunTarget:
    tree: object  # TargetTree
    source: str  # a sentence saying where the tree came from
    fresh: bool  # a scratch copy was (re)made: what earlier runs did to the old one is gone with it


def run_target(repo, run_dir: Path, restart: bool) -> RunTarget:
    """The tree the run acts on (the user's --repo, else the scratch copy, made when needed)."""

    if repo:
        tree = find_target(repo)
        return RunTarget(tree, f"--repo: your tree at {tree.root}; scaffold adds new files there and register makes "
                               "its three edits (register --undo removes them)", False)
    dest = Path(run_dir) / f"mindiesd-{DEFAULT_VERSION}"
    _remove_leftovers(dest)
    fresh = restart or not _complete(dest, DEFAULT_VERSION)
    if fresh:
        _make_copy(dest, DEFAULT_VERSION)
    tree = find_target(dest)
    how = "a fresh scratch copy" if fresh else "the scratch copy (kept from an earlier run)"
    return RunTarget(tree, f"{how} of the real MindIE-SD {tree.version} release from the package cache, in the "
                           "workspace; your own tree is edited only with --repo", fresh)


def _leftovers(dest: Path) -> list[Path]:
    parent = dest.parent
    if not parent.is_dir():
        return []
    return sorted(p for pattern in (f".{dest.name}.staging-*", f".{dest.name}.old-*") for p in parent.glob(pattern))


def _remove_leftovers(dest: Path) -> None:
    """Staging and set-aside copies of a killed run (the pair's lock says no live run is making them)."""
    for path in _leftovers(dest):
        _remove(path)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)  # our own scratch copy in the workspace, never a user's tree
    elif path.exists() or path.is_symlink():
        path.unlink()


def _complete(dest: Path, version: str) -> bool:
    if (dest / SCRATCH_MARKER).is_file():
        return True
    if not (dest / "mindiesd" / "compilation").is_dir():
        return False
    # Made by an sdcompile before the marker (copied in place, so possibly cut short): kept when every file of the
    # release is there (scaffold adds files and register edits some, but none is removed).

    source = ensure_unpacked(version)
    if any(not (dest / p.relative_to(source)).exists() for p in source.rglob("*") if not p.is_dir()):
        return False
    _mark(dest)
    return True


def _mark(folder: Path) -> None:
    atomic_write_text(folder / SCRATCH_MARKER, "copied completely by sdcompile run\n")


def _make_copy(dest: Path, version: str) -> None:
    """A fresh scratch copy at `dest`, built under a staging name and renamed into place."""

    staging = dest.with_name(f".{dest.name}.staging-{os.getpid()}")
    old = dest.with_name(f".{dest.name}.old-{os.getpid()}")
    try:
        scratch_copy(staging, version)
        _mark(staging)
        if step_hook is not None:
            step_hook("copied")
        if dest.exists() or dest.is_symlink():
            os.rename(dest, old)
        os.rename(staging, dest)
    except BaseException:
        _remove(staging)
        if old.exists() and not dest.exists():
            os.rename(old, dest)  # the copy it was to replace, as it was
        raise
    _remove(old)
