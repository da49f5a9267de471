"""Which carrier a registration is for, and what registering it edits.

    pattern group   patterns/__init__.py (`__all__` + import), passes/__init__.py (`pattern_registry` entry, at a
                    position), compiliation_config.py (the flag)
    graph entries   passes/__init__.py (the `register_<model>_<op>_graph_entries` call under the flag, ahead of
                    the registry's groups), compiliation_config.py (the flag): the maintainers' rule for a
                    GraphPatternEntry carrier, which is neither exported nor in `pattern_registry`
    graph pass      nothing: a custom graph pass (passes/<model>_<op>_pass.py, no pattern file) runs once
                    mindie_sd_backend.py calls it, an edit sdcompile shows but never makes; register checks the call

The carrier is read from the pattern file (it defines the group, or the registration function) and, for --undo,
from what passes/__init__.py holds.
"""

from __future__ import annotations

from sdcompile.core.target.discovery import TargetTree
from sdcompile.core.target.naming import RegistrationNames
from sdcompile.core.target.registry import GRAPH_ENTRIES, GRAPH_PASS, PATTERN_GROUP, TargetRegistry
from sdcompile.core.target.registry_audit import module_defines

GROUP_PIECES = ("__all__ entry", "import", "registry entry", "FusionPatterns flag")
ENTRIES_PIECES = ("entries call", "FusionPatterns flag")


def carrier_of(tree: TargetTree, registry: TargetRegistry, names: RegistrationNames, undo: bool,
               if_missing: str | None = None) -> str:
    """`if_missing`: the carrier a file not written yet will hold (a dry run's preview knows it from scaffold)."""

    if undo:
        return GRAPH_ENTRIES if any(c.flag == names.flag for c in registry.entries_calls) else PATTERN_GROUP
    path = tree.patterns_dir / names.pattern_filename
    if not path.is_file() and module_defines(tree.passes_dir / f"{names.pass_module}.py", names.pass_class) is None:
        return GRAPH_PASS
    if not path.is_file() and if_missing is not None:
        return if_missing
    if module_defines(path, names.group) is not None and module_defines(path, names.entries_function) is None:
        return GRAPH_ENTRIES
    return PATTERN_GROUP


def pieces_of(carrier: str) -> tuple[str, ...]:
    return ENTRIES_PIECES if carrier == GRAPH_ENTRIES else GROUP_PIECES


def present(registry: TargetRegistry, names: RegistrationNames, carrier: str) -> dict[str, bool]:
    flag = any(f.name == names.flag for f in registry.flags)
    if carrier == GRAPH_ENTRIES:
        call = any(c.flag == names.flag and c.function == names.entries_function for c in registry.entries_calls)
        return {"entries call": call, "FusionPatterns flag": flag}
    export = next((e for e in registry.exports if e.group == names.group), None)
    return {
        "__all__ entry": bool(export and export.in_all),
        "import": bool(export and export.source_module == names.import_module),
        "registry entry": any(e.flag == names.flag for e in registry.entries),
        "FusionPatterns flag": flag,
    }


def others(registry: TargetRegistry, names: RegistrationNames):
    """Everything the registry holds besides this registration, to prove an edit touched nothing else."""
    return (
        [(e.flag, e.group, e.module) for e in registry.entries if e.flag != names.flag],
        [(f.name, f.default) for f in registry.flags if f.name != names.flag],
        [(e.group, e.source_module, e.in_all) for e in registry.exports if e.group != names.group],
        [(c.flag, c.function, c.module) for c in registry.entries_calls if c.flag != names.flag],
    )


def piece_files(tree: TargetTree, carrier: str) -> dict:
    if carrier == GRAPH_ENTRIES:
        return {"entries call": tree.passes_init, "FusionPatterns flag": tree.config_file}
    return dict(zip(GROUP_PIECES, (tree.patterns_init, tree.patterns_init, tree.passes_init, tree.config_file),
                    strict=True))


def edits(tree: TargetTree, undo: bool, index: int | None, carrier: str) -> dict:
    """Each registration file -> (the LibCST edit that adds or removes this registration's piece, its options)."""
    from sdcompile.core.target.edits import fusion_flags, patterns_init, registry_dict

    if carrier == GRAPH_ENTRIES:
        if undo:
            return {tree.passes_init: (_remove_call, {}), tree.config_file: (fusion_flags.remove_flag, {})}
        return {tree.passes_init: (_ensure_call, {}), tree.config_file: (fusion_flags.ensure_flag, {})}
    if undo:
        return {
            tree.patterns_init: (patterns_init.remove_export, {}),
            tree.passes_init: (registry_dict.remove_registry_entry, {}),
            tree.config_file: (fusion_flags.remove_flag, {}),
        }
    return {
        tree.patterns_init: (patterns_init.ensure_exported, {}),
        tree.passes_init: (registry_dict.ensure_registry_entry, {"index": index}),
        tree.config_file: (fusion_flags.ensure_flag, {}),
    }


def _ensure_call(source: bytes, names: RegistrationNames, where) -> bytes:
    from sdcompile.core.target.edits.entries_call import ensure_entries_call

    return ensure_entries_call(source, names.flag, names.entries_function, names.module, where)


def _remove_call(source: bytes, names: RegistrationNames, where) -> bytes:
    from sdcompile.core.target.edits.entries_call import remove_entries_call

    return remove_entries_call(source, names.flag, where)


def measured_index(registry: TargetRegistry, shadowing: tuple[str, ...]) -> tuple[int | None, str | None]:
    """(0-based registry index before the earliest registered group of `shadowing`, its flag), or (None, None)."""
    entries = [e for e in registry.entries if e.group in shadowing or e.flag in shadowing]
    if not entries:
        return None, None
    first = min(entries, key=lambda e: e.position)
    return first.position - 1, first.flag
