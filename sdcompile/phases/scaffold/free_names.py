"""The registration names scaffold writes under when --name is not given.

--model/--op derive them (enable_wan_rope, WanRopePatternGroup, patterns/wan_rope_pattern.py). When the target
already holds code under those names that scaffold did not write (MindIE-SD ships WanRopePatternGroup, which misses
on torch 2.12+), replacing it is not what `scaffold --model wan --op rope` asks for: the generated group goes beside
it under `<model>_gen` names, as `--name <model>_gen` would put it. An explicit --name is used as given.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sdcompile.core.target.discovery import TargetTree
from sdcompile.core.target.naming import RegistrationNames
from sdcompile.core.target.registry import TargetRegistry
from sdcompile.phases.scaffold.files import written_by_sdcompile

SUFFIX = "_gen"


@dataclass(frozen=True)
class ChosenNames:
    word: str  # the <model> word the names come from
    names: RegistrationNames
    renamed_from: RegistrationNames | None  # the derived names, when they were the target's own


def generated_paths(tree: TargetTree, names: RegistrationNames) -> tuple[Path, ...]:
    """Every file scaffold may write under `names` (generate.py: path A's pattern and test, path B's pass and test)."""
    return (tree.patterns_dir / names.pattern_filename,
            tree.root / "tests" / "compilation" / "patterns" / f"test_{names.module}.py",
            tree.passes_dir / f"{names.pass_module}.py",
            tree.root / names.pass_test)


def held_by_target(tree: TargetTree, registry: TargetRegistry, names: RegistrationNames) -> bool:
    """Whether the target has code under `names` that scaffold did not write: one of the files, or (with none of
    them there) a registration of the flag or group."""
    present = [p for p in generated_paths(tree, names) if p.is_file()]
    if present:
        return not all(written_by_sdcompile(p) for p in present)
    return any(g.flag == names.flag or g.group == names.group for g in registry.groups)


def choose_names(tree: TargetTree, registry: TargetRegistry, name: str | None, model_word: str,
                 derived: RegistrationNames, names_for: Callable[[str], RegistrationNames]) -> ChosenNames:
    """`derived` unless --name was not given and the target holds them, then the `<model>_gen` names (`names_for`
    derives names from a model word; still the derived ones when those are held too: writing then stops with the
    reason and the way out)."""
    if name is not None or not held_by_target(tree, registry, derived):
        return ChosenNames(name or model_word, derived, None)
    word = f"{model_word}{SUFFIX}"
    other = names_for(word)
    if held_by_target(tree, registry, other):
        return ChosenNames(model_word, derived, None)
    return ChosenNames(word, other, derived)
