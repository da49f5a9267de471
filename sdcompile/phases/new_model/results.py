from __future__ import annotations

from dataclasses import dataclass

from sdcompile.core.environment import Versions


@dataclass(frozen=True)
class PrimitiveRun:
    op: str
    title: str  # "RMSNorm"
    implementations: tuple[str, ...]  # display names of what ran
    sites: int


@dataclass(frozen=True)
class NewModelResult:
    class_name: str
    out: str
    written: bool
    dry_run: bool
    size: str  # the any_model.toml [[size]] that ran
    changed: tuple[str, ...]  # what that size changed in the default config
    inputs: str  # the synthesized inputs, shown
    primitives: tuple[PrimitiveRun, ...]  # what the written factory's forward ran (absent ones have no implementations)
    source: str  # the file's text (printed by --dry-run)
    device: str
    versions: Versions
    next_command: str
    missing: tuple[str, ...] = ()  # forward arguments left for the user to fill in (the factory does not run yet)
    problem: str = ""  # why each missing one could not be made
    forward_error: str = ""  # no forward ran with any inputs sdcompile tried: the last tried and what it raised

    @property
    def runs(self) -> bool:
        """The factory as written runs a forward (nothing left to fill in or to correct)."""
        return not self.missing and not self.forward_error
