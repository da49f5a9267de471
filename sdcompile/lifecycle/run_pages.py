"""The HTML reports a run keeps side by side in its folder (integrate, benefit, copy-audit), each linking to the
others. A page links only to pages that exist: each is written again whenever a later step of the same run adds a
page, and an earlier run's later pages are removed when phase 6 runs again, so no link points at a page this run did
not make (benefit is not weighed when the run relies on no group to leave out)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from sdcompile.lifecycle.context import RunContext

Links = tuple[tuple[str, str], ...]
PAGES = (("integrate report", "integrate.html"), ("benefit report", "benefit.html"),
         ("copy-audit report", "copy-audit.html"))
REPORT = ("the run's report (report.md)", "report.md")  # written when the run ends, whatever its verdict


def forget_later_pages(ctx: RunContext) -> None:
    """Phase 6 runs again: the pages after integrate's are an earlier run's until this run writes them."""
    for _label, href in PAGES[1:]:
        (ctx.run_dir / href).unlink(missing_ok=True)


def publish_page(ctx: RunContext, href: str, write: Callable[[Links], None]) -> None:
    """Write the page `href` with `write(links)`, and the run's pages written before it again, now linking to it."""
    ctx.page_writers[href] = write
    links = tuple(p for p in PAGES if p[1] in ctx.page_writers or (ctx.run_dir / p[1]).is_file()) + (REPORT,)
    for written in ctx.page_writers.values():
        written(links)


def report_pages(run_dir: Path, evidence: Iterable[str]) -> tuple[str, ...]:
    """The pages report.md links, in the run's order: those a phase of this run (or a kept one) names as evidence,
    and benefit's page beside integrate's (it is weighed inside phase 6, which removes it before it runs again)."""
    named = {Path(e).name for e in evidence}
    if "integrate.html" in named:
        named.add("benefit.html")
    return tuple(href for _label, href in PAGES if href in named and (run_dir / href).is_file())
