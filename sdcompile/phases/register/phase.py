"""Phase 3, `sdcompile register`: the three registration edits, transactional and idempotent; `--undo`; `--check`.

    patterns/__init__.py      `__all__` entry + `from .<module> import <Group>`
    passes/__init__.py        `"<flag>": ("<Group>", "..patterns")` in pattern_registry, at the chosen position
    compiliation_config.py    `<flag>: bool = True` in FusionPatterns

The target is read with the ast reader (target/registry.py) and edited with LibCST (target/edits/). All three new
contents are computed and re-read before anything is written, then written together (fs_transaction) under the tree's
lock with an intent journal (target/tree_guard), so a refusal, a failure or a signal leaves every file as it was
or fully edited, and the next register, status or --check finishes an edit a killed process left.
"""

from __future__ import annotations

import tempfile
from contextlib import nullcontext
from pathlib import Path

from sdcompile.core.environment import collect_versions
from sdcompile.core.npu.device import activate_for_command
from sdcompile.core.target.discovery import TargetTree, find_target
from sdcompile.core.target.loader import load_target
from sdcompile.core.target.naming import RegistrationNames, registration_names
from sdcompile.core.target.ordering import violations
from sdcompile.core.target.package_import import PACKAGE
from sdcompile.core.target.registry import (
    GRAPH_ENTRIES,
    GRAPH_PASS,
    PATTERN_GROUP,
    TargetRegistry,
    read_target_registry,
)
from sdcompile.core.target.registry_audit import (
    Finding,
    RegistrationAudit,
    audit_registration,
    module_defines,
    with_findings,
)
from sdcompile.core.target.tree_guard import journal_for, needs_recovery, recover_tree, tree_lock
from sdcompile.phases.pair_scope import PairKey, holds_pair
from sdcompile.phases.register import carrier, measured
from sdcompile.phases.register.decided import decided_nothing, nothing_to_register, skipped_summary
from sdcompile.phases.register.graph_pass import backend_call
from sdcompile.phases.register.results import FileChange, PieceChange, RegisterResult
from sdcompile.phases.scaffold.facts import ScaffoldFacts
from sdcompile.util.errors import BadInput
from sdcompile.util.fs_transaction import PlannedWrite, commit_all
from sdcompile.util.fsutil import atomic_write_text
from sdcompile.util.text_diff import unified_diff
from sdcompile.workspace.artifacts import write_artifact
from sdcompile.workspace.store import Workspace


def _refuse_conflicts(registry: TargetRegistry, names: RegistrationNames) -> None:
    """Names that are already taken by another registration: neither register nor undo may touch it."""
    for entry in registry.entries:
        if entry.flag == names.flag and entry.group != names.group:
            raise BadInput(
                f"`{names.flag}` is already registered for {entry.group} (pattern_registry #{entry.position})",
                "choose another --flag, or --undo that registration first",
            )
        if entry.group == names.group and entry.flag != names.flag:
            raise BadInput(
                f"{names.group} is already registered under `{entry.flag}` (pattern_registry #{entry.position})",
                f"use --flag {entry.flag}, or --undo that registration first",
            )
    for call in registry.entries_calls:
        if call.flag == names.flag and call.function != names.entries_function:
            raise BadInput(f"`{names.flag}` already registers {call.function} in passes/__init__.py (line {call.line})",
                           "choose another --flag, or --undo that registration first")
    export = next((e for e in registry.exports if e.group == names.group), None)
    if export and export.source_module and export.source_module != names.import_module:
        raise BadInput(
            f"{names.group} is already imported from {export.source_module} in patterns/__init__.py, "
            f"not from {names.import_module}",
            f"pass --module {export.source_module.lstrip('.')}, or fix that import by hand",
        )


def _insert_index(registry: TargetRegistry, names: RegistrationNames, before: str | None, after: str | None):
    """0-based position for a new registry entry; None appends."""
    key = before or after
    if not key:
        return None
    entry = next((e for e in registry.entries if key in (e.flag, e.group)), None)
    if entry is None:
        from sdcompile.util.choices import UnknownChoice

        raise UnknownChoice("entry", key, [e.flag for e in registry.entries], also=[e.group for e in registry.entries],
                            message=f"no pattern_registry entry {key!r} for --{'before' if before else 'after'}",
                            hint=" (an entry's flag, or its group)")
    if entry.flag == names.flag:
        raise BadInput(f"--{'before' if before else 'after'} {key} names the entry being registered",
                       "name another entry")
    return entry.position - 1 if before else entry.position


def _pattern_file_status(tree: TargetTree, names: RegistrationNames, model: str, op: str,
                         allow_missing: bool, kind: str) -> tuple[str, list[str]]:
    path = tree.patterns_dir / names.pattern_filename
    rel = path.relative_to(tree.root)
    if path.is_file():
        defined = names.entries_function if kind == GRAPH_ENTRIES else names.group
        reason = module_defines(path, defined)
        if reason:
            raise BadInput(f"{rel}: {reason}", "check --group, or fix the pattern file")
        return f"defines {defined}", []
    if not allow_missing:
        raise BadInput(
            f"pattern file {rel} does not exist",
            f"write it first (`sdcompile scaffold --model {model} --op {op}`), pass --module to name an existing "
            "file, or pass --allow-missing to register it before it is written",
        )
    return "missing (--allow-missing)", [
        f"{rel} does not exist yet: until it does, importing the patterns package fails and no pattern group at "
        "all is registered — write it before compiling"
    ]


def _read_planned(tree: TargetTree, contents: dict[Path, bytes]) -> TargetRegistry:
    """Read the planned contents with the same ast reader `status` uses: proves they parse and what they hold."""
    with tempfile.TemporaryDirectory(prefix="sdcompile-register-") as tmp:
        staged = TargetTree(root=Path(tmp), version=tree.version, found_by="planned edit")
        for path, data in contents.items():
            target = Path(tmp) / path.relative_to(tree.root)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        return read_target_registry(staged)


def _check_options(model: str, op: str, before: str | None, after: str | None, undo: bool) -> None:
    if not model or not op:
        raise BadInput("register needs --model and --op (they name the workspace record and derive the names)",
                       "pass both, e.g. --model flux --op rmsnorm")
    if before and after:
        raise BadInput("--before and --after cannot be combined", "pass one of them")
    if undo and (before or after):
        raise BadInput("--before/--after do not apply to --undo", "drop them")


def _not_moved(registry: TargetRegistry, entry, before: str | None, after: str | None) -> list[str]:
    """An entry already registered elsewhere than --before/--after asks stays where it is: say so."""
    key = next(e for e in registry.entries if (before or after) in (e.flag, e.group))
    if (entry.position > key.position) == bool(after):
        return []
    return [f"already registered at #{entry.position}, not {'before' if before else 'after'} {key.flag} "
            f"(#{key.position}): an existing entry is not moved (--undo, then register again to move it)"]


def _outcome(undo: bool, before: dict[str, bool], changed: bool) -> str:
    if undo:
        return "removed" if changed else "not registered"
    if not changed:
        return "already registered"
    return "completed" if any(before.values()) else "registered"


def _registered_pair(arguments: dict) -> PairKey | None:
    """register records under --model and --op as given (they also derive the names), once the names pass the checks
    register makes anyway (nothing is made for bad input); a preview records nothing."""
    a = arguments
    if a["dry_run"] or not a["model"] or not a["op"]:
        return None
    _check_options(a["model"], a["op"], a["before"], a["after"], a["undo"])
    if not decided_nothing(a["model"], a["op"], a["decided"], a["workdir"],
                           named=bool(a["undo"] or a["flag"] or a["group"] or a["module"]), repo=a["repo"]):
        registration_names(a["model"], a["op"], a["flag"], a["group"], a["module"])
    return PairKey(a["model"], (a["op"],))


@holds_pair(_registered_pair)
def register(
    repo: Path | str | None,
    model: str,
    op: str,
    *,
    flag: str | None = None,
    group: str | None = None,
    module: str | None = None,
    before: str | None = None,
    after: str | None = None,
    allow_missing: bool = False,
    carrier_of_missing: str | None = None,
    undo: bool = False,
    dry_run: bool = False,
    workdir: Path | str | None = None,
    decided: ScaffoldFacts | None = None,
) -> RegisterResult:
    """Register (or with `undo`, unregister) a pattern group in the target's three registration files. Given no
    names, a pair whose scaffold (`decided`, else the pair's record) reused the target's groups or found the fused
    op already called has nothing to register: the result says so and phase 3 is recorded as skipped."""

    _check_options(model, op, before, after, undo)
    if nothing := decided_nothing(model, op, decided, workdir, named=bool(undo or flag or group or module), repo=repo):
        return _record(nothing_to_register(repo, model, op, nothing, dry_run), workdir)
    names = registration_names(model, op, flag, group, module)
    tree = find_target(repo)
    if not dry_run:  # the record is written after the edit: a state file it cannot update stops it before
        from sdcompile.workspace.store import Workspace

        Workspace(workdir).load_pair(model, op)  # (the pair's lock is held from here to the record: @holds_pair)
    # The lock spans reading and writing, so a concurrent register cannot plan against contents about to change.
    notes: list[str] = []
    if dry_run:
        lock = nullcontext()
        if needs_recovery(tree):
            notes.append("an interrupted edit of this tree is pending; register, status or register --check "
                         "completes or rolls it back")
    else:
        lock = tree_lock(tree)
    with lock:
        recovery = None if dry_run else recover_tree(tree)
        if recovery:
            notes.append(recovery.one_line())
        current = read_target_registry(tree)
        _refuse_conflicts(current, names)
        kind = carrier.carrier_of(tree, current, names, undo, carrier_of_missing)
        if kind == GRAPH_PASS:
            return _record(backend_call(tree, current, names, model, op, notes, dry_run, workdir), workdir)
        index, placement, ignored_position = None, None, None
        if undo:
            pattern_status = "not checked (--undo)"
        else:
            pattern_status, missing_notes = _pattern_file_status(tree, names, model, op, allow_missing, kind)
            notes += missing_notes
            if kind == PATTERN_GROUP:
                index = _insert_index(current, names, before, after)
                if index is None and not (before or after):
                    index, placement = measured.placement(current, names, model, op, workdir)
            elif before or after:
                ignored_position = before or after

        files = carrier.edits(tree, undo, index, kind)
        originals = {path: path.read_bytes() for path in files}
        planned = {
            path: edit(originals[path], names, where=path.relative_to(tree.root), **kwargs)
            for path, (edit, kwargs) in files.items()
        }

        untouched = {path: path.read_bytes() for path in (tree.patterns_init, tree.passes_init, tree.config_file)
                     if path not in planned}
        result_registry = _read_planned(tree, {**untouched, **planned})
        present_before = carrier.present(current, names, kind)
        present_after = carrier.present(result_registry, names, kind)
        if (set(present_after.values()) != {not undo}
                or carrier.others(result_registry, names) != carrier.others(current, names)):
            raise RuntimeError(f"planned registration edit is inconsistent: {present_after}")  # a bug, exit 70

        entry = next((e for e in result_registry.entries if e.flag == names.flag), None)
        if entry and present_before["registry entry"] and (before or after):
            notes += _not_moved(result_registry, entry, before, after)
        default = next((f.default for f in result_registry.flags if f.name == names.flag), True)
        if not undo and default is not True:
            notes.append(f"FusionPatterns.{names.flag} defaults to {default}: the group is registered but not enabled")

        rel = {
            tree.patterns_init: str(tree.patterns_init.relative_to(tree.root)),
            tree.passes_init: str(tree.passes_init.relative_to(tree.root)),
            tree.config_file: str(tree.config_file.relative_to(tree.root)),
        }
        piece_file = carrier.piece_files(tree, kind)
        pieces = tuple(
            PieceChange(rel[piece_file[p]], p, present_before[p], present_after[p]) for p in carrier.pieces_of(kind)
        )
        changes = tuple(
            FileChange(rel[path], planned[path] != originals[path],
                       unified_diff(originals[path], planned[path], rel[path]))
            for path in files
        )
        changed = any(c.changed for c in changes)
        ordering = () if undo else violations([e.flag for e in result_registry.entries], involving=names.flag)
        call = next((c for c in result_registry.entries_calls if c.flag == names.flag), None)

        written = False
        if changed and not dry_run:
            commit_all([PlannedWrite(path, originals[path], planned[path]) for path in files], journal_for(tree))
            written = True

    result = RegisterResult(
        action="undo" if undo else "register",
        outcome=_outcome(undo, present_before, changed),
        target_root=str(tree.root),
        target_version=tree.version,
        model=model,
        op=op,
        names=names,
        pattern_file=str((tree.patterns_dir / names.pattern_filename).relative_to(tree.root)),
        pattern_file_status=pattern_status,
        position=entry.position if entry else call.position if call else None,
        registry_size=len(result_registry.entries),
        pieces=pieces,
        files=changes,
        ordering=ordering,
        notes=tuple(notes),
        dry_run=dry_run,
        written=written,
        workspace=None,
        versions=collect_versions(tree),
        carrier=kind,
        placement=placement,
        ignored_position=ignored_position,
    )
    return _record(result, workdir)


def _record(result: RegisterResult, workdir: Path | str | None) -> RegisterResult:
    """Record phase 3 for the model/op pair, with the result and the applied diff as evidence (a dry run: nothing)."""
    if result.dry_run:
        return result
    from dataclasses import replace

    ws = Workspace(workdir)
    folder = ws.pair_dir(result.model, result.op)
    result = replace(result, workspace=str(folder))
    evidence = [folder / "register.json"]
    write_artifact("register", evidence[0], result)
    # Evidence is the last action's: its result and, when it changed the target, the diff it applied.
    diff_file = folder / ("register.diff" if result.action == "register" else "register-undo.diff")
    for stale in {folder / "register.diff", folder / "register-undo.diff"} - {diff_file}:
        stale.unlink(missing_ok=True)
    diff = "".join(f.diff for f in result.files)
    if diff:
        atomic_write_text(diff_file, diff)
    if diff_file.is_file():  # after a no-change run, the diff that made the registration still describes it
        evidence.append(diff_file)
    n = result.names
    if result.skipped:
        ws.record(result.model, result.op, "register", "skipped", skipped_summary(result), evidence=evidence)
        return result
    if result.carrier == GRAPH_PASS:
        summary = (f"mindie_sd_backend.py calls {n.pass_class} in graph_rewrite_after_freezing" if result.backend_calls
                   else f"mindie_sd_backend.py does not call {n.pass_class}: the custom graph pass never runs")
        evidence += [Path(result.backend_diff)] if result.backend_diff else []
        ws.record(result.model, result.op, "register", "pass" if result.backend_calls else "fail", summary,
                  evidence=evidence)
        return result
    if result.action == "register":
        if result.carrier == GRAPH_ENTRIES:
            summary = f"{n.entries_function} as {n.flag} (ahead of pattern_registry): {result.outcome}"
        else:
            summary = f"{n.group} as {n.flag} (#{result.position} of {result.registry_size}): {result.outcome}"
        if result.ordering:
            summary += f"; breaks {len(result.ordering)} ordering rule(s)"
        verdict = "pass"
    else:
        # Undone means phase 3 is no longer done: the lifecycle's next step is to register again.
        summary = f"{n.group} / {n.flag}: {result.outcome} by register --undo"
        verdict = "fail"
    ws.record(result.model, result.op, "register", verdict, summary, evidence=evidence)
    return result


def check_registration(repo: Path | str | None, import_modules: bool = False,
                       workdir: Path | str | None = None) -> RegistrationAudit:
    """`register --check`: audit the whole target's registration (exit 1 when it finds an error), with the
    shadowing scaffold measured for the workspace's pairs (`workdir`).

    With `import_modules`, also import the target's pattern package and every pattern module under the NPU
    (real, or emulated on CPU) and report what fails: the static check cannot see a module that parses and
    defines its group but raises when imported.
    """
    from dataclasses import replace

    tree = find_target(repo)
    recovery = recover_tree(tree)  # before reading, so the audit sees the tree as the interrupted edit left it done
    audit = replace(audit_registration(tree, measured=measured.shadowing(workdir)),
                    recovered=recovery.one_line() if recovery else None)
    if not import_modules:
        return audit
    return _import_findings(tree, audit)


def _import_findings(tree: TargetTree, audit: RegistrationAudit) -> RegistrationAudit:
    device = activate_for_command()
    loaded = load_target(tree, reload=True)  # the files as they are now, not an earlier import
    init = str(tree.patterns_init.relative_to(tree.root))
    extra = [
        Finding("error", "import-failed", m.module, f"importing it fails: {m.error}", init)
        for m in loaded.modules
        if m.module == f"{PACKAGE}.compilation.patterns" and not m.ok
    ]
    for g in loaded.groups:
        where = f"{tree.patterns_dir.relative_to(tree.root)}/{g.module}.py" if g.module else init
        if not g.loaded:
            extra.append(Finding("error" if g.flag else "warning", "import-failed", g.group,
                                 f"{g.group} does not import: {g.error}", where))
        elif not g.patterns:
            extra.append(Finding("warning", "empty-group", g.group,
                                 f"{g.group} imports but holds no pattern, so registering it does nothing", where))
    how = f"imported under {device.label} ({loaded.package_note})"
    return with_findings(audit, extra, how, device.label)
