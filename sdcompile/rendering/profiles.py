"""Rendering pieces shared by the integrate and copy-audit reports."""

from __future__ import annotations

from rich import box as boxes
from rich.console import Console

from sdcompile.core.profiles.copies import NO_ATTENTION, NOT_READ, CopyBreakdown, shown_ratio
from sdcompile.core.profiles.locate import compact_ranges
from sdcompile.core.profiles.profile import ProfileSummary
from sdcompile.core.profiles.read import EXACT
from sdcompile.rendering.tables import FitTable
from sdcompile.util.log import verbosity

VERDICT_STYLE = {"pass": "green", "fail": "red", "unconfirmed": "yellow", "skipped": "dim", "incomplete": "yellow",
                 "info": "cyan", "not set": "dim"}


def styled(verdict: str) -> str:
    """A gate's or layer's verdict word in its colour."""
    return f"[{VERDICT_STYLE.get(verdict, 'white')}]{verdict}[/]"


def us(value: float) -> str:
    return f"{value:,.1f}"


def signed(value: float) -> str:
    return f"{value:+,.1f}"


def ratio(value: float, undefined: bool = False) -> str:
    """compile/eager: n/a for 0 -> 0, inf when only eager is 0."""
    return shown_ratio(value, undefined)


def render_sides(console: Console, eager: ProfileSummary, compiled: ProfileSummary,
                 labels: tuple[str, str] = ("eager", "compile")) -> None:
    """Each side's ranks; the header variant only with -v, and the source once when both sides share it."""
    full = verbosity() > 0
    one_source = eager.source == compiled.source and not full
    columns = ("side", "rank", *(("header variant",) if full else ()), "rows", "kernel time (us)", "steps",
               *(() if one_source else ("source",)))
    table = FitTable(title="Profiles" + (f" ({eager.source})" if one_source else ""), title_justify="left",
                     box=boxes.SIMPLE_HEAD, show_edge=False)
    for col in columns:
        table.add_column(col, overflow="fold")
    for side, p in zip(labels, (eager, compiled), strict=True):
        for r in p.ranks:
            about = [f"rank {r.rank_id}" if r.rank_id is not None else "", r.level or "",
                     f"{r.files} slices" if r.files > 1 else ""]
            cells = {"side": side, "rank": r.label + (f" ({', '.join(a for a in about if a)})" if any(about) else ""),
                     "header variant": r.variant, "rows": f"{r.rows:,}", "kernel time (us)": us(r.kernel_us),
                     "steps": compact_ranges(list(r.steps)) if r.steps else "-", "source": p.source}
            table.add_row(*(cells[col] for col in columns))
        if len(p.ranks) > 1:
            total = {"side": side, "rank": "[bold]all ranks[/]", "rows": f"{p.rows:,}",
                     "kernel time (us)": us(p.kernel_us)}
            table.add_row(*(total.get(col, "") for col in columns))
    if eager.step is not None:
        table.caption = f"step {eager.step} only (--step)"
    console.print(table)


def render_notes(console: Console, notes: tuple[str, ...]) -> None:
    for note in notes:
        console.print(f"note: {note}", highlight=False)


def segment_text(side: str, b: CopyBreakdown) -> str:
    """One side's per-layer status in words: how its rows were ordered, or why it has no segments."""
    if b.segment_status == NOT_READ:
        return f"{side}: not computed (row order not read)"
    if b.segment_status == NO_ATTENTION:
        return f"{side}: no attention kernels, so no layer boundaries to derive"
    order = ("ordered by exact start time" if b.ordering == EXACT
             else f"in file order ({b.ordering}): only as right as the file's row order")
    return f"{side}: {len(b.per_segment)} segment(s), {order}"


SEGMENT_NOTE = ("segment k = kernels after the k-th attention kernel of a step, summed over steps and ranks; a layer "
                "index when each layer runs one attention")
SHARE_BASIS = "copies / non-communication kernels (n: launches, us: time)"
