"""What `sdcompile matrix` returns: one cell per model and op, each the outcome `sdcompile run` reached for that
pair on this machine's torch and target, with the figures that back it."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from sdcompile.core.environment import Versions
from sdcompile.lifecycle.matrix.outcomes import OutcomeRow


class Outcome(StrEnum):
    REUSED = "reused"  # every gate passed with the target's own groups
    GENERATED = "generated"  # every gate passed with a group scaffold generated (`carrier` names it)
    ALREADY_FUSED = "already fused"  # the model calls the fused op itself
    NO_SITE = "no site"  # the model has none of the op's chains
    DEAD_END = "dead end"  # a gate failed that fails the same way when run again (scaffold cannot generate)
    NPU_KERNEL = "fails on the NPU kernel"  # a fused call of the op's group raises or differs on the NPU's kernel
    FAILS = "fails"  # a gate failed (`phase`, `why`)
    REFUSED = "refused"  # the run refused its input (exit 2: an unknown model, a model that does not build)
    CRASHED = "crashed"  # the run ended without a result otherwise (exit 70, a signal): a bug, said as one
    TIMED_OUT = "timed out"  # the run took longer than --cell-timeout


PASSING = (Outcome.REUSED, Outcome.GENERATED, Outcome.ALREADY_FUSED)
# How far the target itself covers a cell: its own groups (or the model's own call), a group sdcompile had to
# generate, or not at all. A cell that drops (reused -> generated: the tree's group no longer takes the model) is a
# regression of the target's coverage.
COVERAGE = {Outcome.REUSED: 2, Outcome.ALREADY_FUSED: 2, Outcome.GENERATED: 1}


def coverage(outcome: Outcome | str) -> int:
    return COVERAGE.get(Outcome(outcome), 0)


@dataclass(frozen=True)
class Cell:
    """One model and op: the outcome `sdcompile run` reached (or, with --until scaffold, `scaffold --dry-run`)."""

    model: str  # as `run --model` takes it (a zoo name or diffusers class), or FILE:FACTORY for a model file
    op: str
    torch: str  # the torch the cell ran on
    outcome: Outcome
    carrier: str  # generated: "pattern group", "graph entry" or "graph pass"; reused: the groups; else ""
    phase: str  # the phase it stopped at ("" when every gate passed)
    why: str  # why it stopped, as run said it ("" when every gate passed)
    fused_nodes: int | None  # the op's fused calls in the compiled graph that runs (integrate), when it got there
    fused_launches: float | None  # the op's fused kernel launches per step in the compiled profile
    cosine: float | None  # compiled vs eager output (integrate)
    seconds: float
    report: str  # the cell's report.md, relative to the matrix folder ("" when the run wrote none)
    exit_code: int  # of the cell's command (-1 when it timed out)
    scaffold: OutcomeRow | None = None  # `--until scaffold`: scaffold's outcome, as the guides' tables show it

    @property
    def passed(self) -> bool:
        return self.outcome in PASSING

    @property
    def key(self) -> tuple[str, str, str]:
        return self.model, self.op, self.torch


@dataclass(frozen=True)
class Change:
    """A cell whose outcome differs from the compared table's."""

    model: str
    op: str
    torch: str
    before: str  # the old outcome ("" when the old table had no such cell)
    after: str  # the new outcome ("" when this table has none)
    regression: bool  # the target covers it less than before (COVERAGE)


@dataclass(frozen=True)
class MatrixReport:
    cells: tuple[Cell, ...]
    models: tuple[str, ...]
    ops: tuple[str, ...]
    shard: str  # "i/n" when this is one shard of the table, "" for the whole (merged: the shards joined)
    target: str  # the MindIE-SD every cell compiled through
    sdcompile: str  # the version that made the cells
    folder: str  # where the cells' workspaces and reports are
    versions: Versions
    until: str = "run"  # how far each cell went: the whole lifecycle (`run`), or `scaffold --dry-run`
    # (torch version, the guides' torch state it is in: outcomes.torch_range) for each torch the cells ran on
    torch_states: tuple[tuple[str, str], ...] = ()
    merged_from: tuple[str, ...] = ()  # the shard files `matrix merge` joined
    compared_with: str = ""  # --compare's file
    changes: tuple[Change, ...] = ()

    @property
    def regressions(self) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if c.regression)
