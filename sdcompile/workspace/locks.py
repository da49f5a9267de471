"""One command at a time per workspace pair: a file lock with a holder record that names the command holding it.

    <workdir>/<model>/<op>/pair.lock          flock (filelock) held by the command working in the pair's folder
    <workdir>/<model>/<op>/pair-holder.json   that command's pid and command line, to name it to a waiting one

Every command that writes a pair's folder holds it while it works (`sdcompile.phases.pair_scope`): `run` for the
whole run, the phases run alone, and `sdcompile profile --out` when the folder is inside a pair's folder (run's own
profiles are there), so two of them never write the same records, profiles or scratch copy. A second command waits
up to $SDCOMPILE_LOCK_TIMEOUT seconds (default 10, the variable the target tree's lock reads), then exits 2 naming
the holder.

Decision: the lock lives in the pair folder itself, beside state.json and its lock, not in `run/`: the pair folder
is what every writer of the pair shares (run's scratch copy, profiles and report, the phases' own records), `run/`
is not there before the first run, and `run --restart` may rebuild what is under `run/` but never the lock.
`util.held_lock` is the mechanism; `pair_lock` is the pair's use of it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sdcompile.util.errors import BadInput
from sdcompile.util.held_lock import held_lock, make_lock_folder
from sdcompile.workspace.store import STATE_FILE

PAIR_LOCK = "pair.lock"
PAIR_HOLDER = "pair-holder.json"


@contextmanager
def pair_lock(pair_dir: Path) -> Iterator[None]:
    """Hold the workspace pair's lock for the block (see the module docstring); creates the pair folder."""
    pair_dir = Path(pair_dir).resolve()  # one lock object per pair in a process, however its path was spelled
    make_lock_folder(pair_dir, "the pair's lock", "make the workspace writable (or pass another --workdir) and run "
                     "again")

    def busy(who: str) -> BadInput:
        return BadInput(f"{pair_dir} is in use by {who}; nothing was changed",
                        "wait for that command to finish and run again (two commands on one pair would write the "
                        "same records, profiles and scratch copy)")

    with held_lock(pair_dir / PAIR_LOCK, pair_dir / PAIR_HOLDER, busy):
        yield


def pair_folder_of(path: Path) -> Path | None:
    """The workspace pair folder `path` is in (the nearest folder holding a state.json), or None."""
    for folder in (Path(path).resolve(), *Path(path).resolve().parents):
        if (folder / STATE_FILE).is_file():
            return folder
    return None
