from __future__ import annotations

from dataclasses import dataclass

from sdcompile.core.environment import Versions
from sdcompile.util.errors import EXIT_BAD_INPUT, EXIT_GATE_FAILED, EXIT_OK


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
    def exit_code(self) -> int:
        """0 when the factory runs; 2 when the class's forward raised (the model's failure, as every command answers
        it); 1 when an argument is left to fill in (sdcompile could not make it)."""
        if self.forward_error:
            return EXIT_BAD_INPUT
        return EXIT_GATE_FAILED if self.missing else EXIT_OK
