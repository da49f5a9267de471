"""Rendering pieces shared by the integrate and copy-audit reports."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from sdcompile.profiles.profile import ProfileSummary

VERDICT_STYLE = {"pass": "green", "fail": "red", "unconfirmed": "yellow", "skipped": "dim", "incomplete": "yellow",
                 "info": "cyan", "not set": "dim"}


def verdict(text: str) -> str:
    return f"[{VERDICT_STYLE.get(text, 'white')}]{text}[/]"


def us(value: float) -> str:
    return f"{value:,.1f}"


def signed(value: float) -> str:
    return f"{value:+,.1f}"


def ratio(value: float) -> str:
    return "inf" if value == float("inf") else f"{value:.2f}x"


def render_sides(console: Console, eager: ProfileSummary, compiled: ProfileSummary) -> None:
    table = Table(title="Profiles", title_justify="left")
    for col in ("side", "rank", "header variant", "rows", "kernel time (us)", "steps", "source"):
        table.add_column(col, overflow="fold")
    for side, p in (("eager", eager), ("compile", compiled)):
        for r in p.ranks:
            steps = ",".join(str(s) for s in r.steps) if r.steps else "-"
            table.add_row(side, r.label, r.variant, f"{r.rows:,}", us(r.kernel_us), steps, p.source)
        if len(p.ranks) > 1:
            table.add_row(side, "[bold]all ranks[/]", "", f"{p.rows:,}", us(p.kernel_us), "", "")
    if eager.step is not None:
        table.caption = f"step {eager.step} only (--step)"
    console.print(table)


def render_notes(console: Console, notes: tuple[str, ...]) -> None:
    for note in notes:
        console.print(f"note: {note}", highlight=False)
