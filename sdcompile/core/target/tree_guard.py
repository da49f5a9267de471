"""One writer at a time per MindIE-SD tree, and recovery of an edit an earlier process left half-done.

    <root>/.sdcompile-tree/lock          flock held (filelock) by the command editing the tree
    <root>/.sdcompile-tree/holder.json   that command's pid and command line, to name it to a waiting one
    <root>/.sdcompile-tree/journal.json  the intent journal of the commit in progress (fs_transaction)

A second command waits up to $SDCOMPILE_LOCK_TIMEOUT seconds (default 10), then exits 2 naming the holder.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sdcompile.core.target.discovery import TargetTree
from sdcompile.util.errors import BadInput
from sdcompile.util.fs_transaction import Journal, Recovery, recover
from sdcompile.util.held_lock import command_line, held_lock, make_lock_folder

STATE_DIR = ".sdcompile-tree"


def _state_dir(tree: TargetTree) -> Path:
    return tree.root / STATE_DIR


def journal_for(tree: TargetTree, command: str | None = None) -> Journal:
    return Journal(_state_dir(tree) / "journal.json", tree.root, command or command_line())


@contextmanager
def tree_lock(tree: TargetTree) -> Iterator[None]:
    """Hold the tree's lock for the block; re-entrant within a process (`run` calls several editing phases)."""
    folder = _state_dir(tree)
    make_lock_folder(folder, "the tree's lock", f"make it writable (chmod u+w {tree.root}) and run again, or work on "
                     "a writable copy of the tree")

    def busy(who: str) -> BadInput:
        return BadInput(f"{tree.root} is being edited by {who}; nothing was changed",
                        "wait for that command to finish and run again")

    with held_lock(folder / "lock", folder / "holder.json", busy):
        yield


def _stale_staged(tree: TargetTree) -> list[Path]:
    """Staged copies of the registration files that no journal accounts for (a process killed while staging)."""
    found = []
    for path in (tree.patterns_init, tree.passes_init, tree.config_file):
        found += [p for p in path.parent.glob(f".{path.name}.*.tmp") if p.is_file()]
    return found


def needs_recovery(tree: TargetTree) -> bool:
    return (_state_dir(tree) / "journal.json").is_file() or bool(_stale_staged(tree))


def recover_tree(tree: TargetTree) -> Recovery | None:
    """Complete or roll back an interrupted edit of the tree and remove stale staged files (under the lock)."""
    if not needs_recovery(tree):
        return None
    with tree_lock(tree):
        journal = journal_for(tree)
        recovery = recover(journal.path, journal.base)
        stale = _stale_staged(tree)
        for path in stale:
            path.unlink(missing_ok=True)
    if recovery is None and stale:
        return Recovery("", "cleaned up", tuple(str(p.relative_to(tree.root)) for p in stale))
    return recovery
