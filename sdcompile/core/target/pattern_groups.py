"""The target's pattern groups as this process loaded them: registry position and flag, module, patterns, error."""

from __future__ import annotations

import sys
from dataclasses import dataclass

from sdcompile.core.target.discovery import TargetTree
from sdcompile.core.target.failures import describe_error
from sdcompile.core.target.package_import import PACKAGE, ModuleLoad
from sdcompile.core.target.registry import GRAPH_ENTRIES, PATTERN_GROUP, TargetRegistry
from sdcompile.util.choices import UnknownChoice


@dataclass(frozen=True)
class GroupLoad:
    position: int | None  # order in pattern_registry; None for a group exported but not registered there
    flag: str | None
    group: str
    module: str | None  # "rms_norm_pattern"
    loaded: bool
    error: str | None
    patterns: tuple[str, ...]  # PatternBase.name() of each pattern in the group (a carrier: each chain's name)
    carrier: str = PATTERN_GROUP  # or GRAPH_ENTRIES: `group` is the registration function passes/__init__.py calls


def compute_groups(tree: TargetTree, registry: TargetRegistry,
                   pattern_modules: tuple[ModuleLoad, ...]) -> dict[str, GroupLoad]:
    """Every group pattern_registry names, then those only exported by patterns/__init__.py, by group name."""
    patterns_pkg = sys.modules.get(f"{PACKAGE}.compilation.patterns")
    failed = {m.module.rsplit(".", 1)[-1]: m.error for m in pattern_modules if not m.ok}
    registered = {g.group: g for g in registry.groups}
    names = list(registered) + [e.group for e in registry.exports if e.group not in registered]
    groups: dict[str, GroupLoad] = {}
    for name in names:
        reg = registered.get(name)
        if reg is not None and reg.carrier == GRAPH_ENTRIES:
            groups[name] = _entries_load(reg, failed, tree)
            continue
        export = next((e for e in registry.exports if e.group == name), None)
        source = (reg.source_module if reg else export.source_module if export else None) or ""
        module = source.lstrip(".") or None
        group = getattr(patterns_pkg, name, None) if patterns_pkg is not None else None
        error = None
        if group is None:
            error = failed.get(module or "") or (
                f"{name} is not exported by mindiesd/compilation/patterns/__init__.py" if patterns_pkg
                else "mindiesd.compilation.patterns did not import"
            )
        pattern_names: tuple[str, ...] = ()
        if group is not None:
            try:
                pattern_names = tuple(p.name() for p in group)
            except Exception as exc:  # noqa: BLE001 - a broken group is reported, not raised
                error = describe_error(exc, tree.root)
        groups[name] = GroupLoad(
            position=reg.position if reg else None, flag=reg.flag if reg else None, group=name,
            module=module, loaded=group is not None and error is None, error=error, patterns=pattern_names,
        )
    return groups


def _entries_load(reg, failed: dict, tree: TargetTree) -> GroupLoad:
    """A GraphPatternEntry carrier as loaded: its module imported with the others, its chains' names (CHAINS, as
    sdcompile generates it; a hand-written carrier has none to list)."""
    module = (reg.source_module or "").lstrip(".") or None
    loaded = sys.modules.get(f"{PACKAGE}.compilation.patterns.{module}") if module else None
    error = None
    if loaded is None:
        error = failed.get(module or "") or f"{reg.group} is not in a module of mindiesd/compilation/patterns/"
    elif not callable(getattr(loaded, reg.group, None)):
        error = f"{module}.py does not define {reg.group}"
    chains: tuple[str, ...] = ()
    if error is None:
        try:
            chains = tuple(str(c.name) for c in getattr(loaded, "CHAINS", ()))
        except Exception as exc:  # noqa: BLE001 - a broken carrier is reported, not raised
            error = describe_error(exc, tree.root)
    return GroupLoad(position=0, flag=reg.flag, group=reg.group, module=module, loaded=error is None, error=error,
                     patterns=chains, carrier=GRAPH_ENTRIES)


def find_group(groups: dict[str, GroupLoad], name_or_flag: str, tree: TargetTree) -> GroupLoad:
    """A group by its name (`WanRmsNormPatternGroup`, case-insensitive) or its flag (`enable_wan_rmsnorm`)."""
    wanted = name_or_flag.lower()
    for g in groups.values():
        if g.group.lower() == wanted or (g.flag or "").lower() == wanted:
            return g

    raise UnknownChoice("pattern group", name_or_flag, [g.group for g in groups.values()],
                        message=f"no pattern group {name_or_flag!r} in {tree.root}",
                        also=[g.flag for g in groups.values() if g.flag])
