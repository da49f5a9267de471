"""The files scaffold writes into the target: planned, shown as diffs, written all together or not at all.

An existing file is never replaced without `force`. Writing is one transaction (fs_transaction, under the tree's
lock, with an intent journal): a failure or a signal part-way puts back what was there and removes what was
created, and a killed process's edit is finished by the next command that edits or reads the tree.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from sdcompile.core.target.discovery import TargetTree
from sdcompile.core.target.tree_guard import journal_for, recover_tree, tree_lock
from sdcompile.phases.scaffold.sources import GENERATED_BY
from sdcompile.util.errors import BadInput
from sdcompile.util.fs_transaction import PlannedWrite, commit_all
from sdcompile.util.text_diff import unified_diff


@dataclass(frozen=True)
class PlannedFile:
    path: Path  # absolute
    relative: str  # to the target root
    kind: str  # "pattern" | "graph entries" | "graph pass", each or "... test"
    text: str


@dataclass(frozen=True)
class FileOutcome:
    path: str  # relative to the target root
    kind: str
    status: str  # created | overwritten | unchanged | would create | would overwrite | exists
    lines: int
    diff: str  # unified diff against what is there now ("" when unchanged)


def outcomes(planned: list[PlannedFile], dry_run: bool, force: bool) -> list[FileOutcome]:
    """What writing `planned` would do to each file (nothing is written here)."""
    found = []
    for f in planned:
        old = f.path.read_text(encoding="utf-8") if f.path.is_file() else ""
        exists = f.path.exists()
        if exists and old == f.text:
            status = "unchanged"
        elif not exists:
            status = "would create" if dry_run else "created"
        elif not force:
            status = "exists"
        else:
            status = "would overwrite" if dry_run else "overwritten"
        diff = "" if status == "unchanged" else unified_diff(old if exists else None, f.text, f.relative)
        found.append(FileOutcome(f.relative, f.kind, status, f.text.count("\n"), diff))
    return found


GENERATED_MARK = f"# {GENERATED_BY}`sdcompile "  # the first line of every file scaffold writes


def written_by_sdcompile(path: Path) -> bool:
    """Whether the file at `path` is one scaffold wrote (its first line is the generated-by header)."""
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            return handle.readline().startswith(GENERATED_MARK)
    except OSError:
        return False


def refuse_overwrite(results: list[FileOutcome], planned: list[PlannedFile], word: str) -> None:
    """BadInput when a planned file exists with other content. A file scaffold did not write (the target's own
    group under the names --model/--op derive: MindIE-SD's WanRopePatternGroup for --model wan) is named as such,
    and the way out is other names, not --force."""
    existing = [r.path for r in results if r.status == "exists"]
    if not existing:
        return
    paths = {f.relative: f.path for f in planned}
    theirs = [p for p in existing if not written_by_sdcompile(paths[p])]
    if theirs:
        raise BadInput(
            f"{', '.join(theirs)} already exist{'s' if len(theirs) == 1 else ''}, not written by sdcompile (the "
            "target's own code under the names this model and op give); nothing was written",
            f"pass --name to write the generated files beside it (e.g. --name {word}_gen), or --force to replace it",
        )
    raise BadInput(
        f"{', '.join(existing)} already exist{'s' if len(existing) == 1 else ''} and differ from what scaffold "
        "generates; nothing was written",
        "pass --dry-run to see the differences, --force to overwrite",
    )


def settle(planned: list[PlannedFile], all_hit: bool, dry_run: bool, force: bool, tree: TargetTree,
           say, word: str) -> tuple[list[FileOutcome], bool]:
    """Write `planned` unless this is a dry run or the self-check missed a site (`all_hit` false: then nothing is
    written): (each file's outcome, whether anything was written)."""
    results = outcomes(planned, dry_run, force)
    if not planned or dry_run:
        return results, False
    if not all_hit:
        return [replace(r, status="not written (self-check failed)") for r in results], False
    refuse_overwrite(results, planned, word)
    say("writing the generated files")
    write_all(planned, tree)
    return results, any(r.status in ("created", "overwritten") for r in results)


def write_all(planned: list[PlannedFile], tree: TargetTree) -> None:
    """Write every planned file as one transaction under the tree's lock (fs_transaction): all, or none of them."""

    with tree_lock(tree):
        recover_tree(tree)
        writes = []
        for f in planned:
            if f.path.exists() and not f.path.is_file():
                raise BadInput(f"{f.path} exists and is not a file; every file is as it was",
                               "move it away and run again")
            try:
                f.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise BadInput(f"cannot create {f.path.parent} ({exc.strerror or exc}); every file is as it was",
                               "fix permissions and run again") from exc
            writes.append(PlannedWrite(f.path, f.path.read_bytes() if f.path.is_file() else None,
                                       f.text.encode("utf-8")))
        commit_all(writes, journal_for(tree))
