"""The run's HTML pages link only to pages that exist: written again as the run adds one, an earlier run's later
pages forgotten when phase 6 runs again (benefit is not weighed when the run has no group to leave out)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from sdcompile.lifecycle.run_pages import REPORT, forget_later_pages, publish_page, report_pages


def _ctx(run_dir: Path) -> SimpleNamespace:
    return SimpleNamespace(run_dir=run_dir, page_writers={})


def _writer(run_dir: Path, name: str):
    def write(links) -> None:
        (run_dir / name).write_text("\n".join(href for _label, href in links))
    return write


def _links(run_dir: Path, name: str) -> list[str]:
    return (run_dir / name).read_text().splitlines()


def test_a_page_is_written_again_when_the_run_adds_one_and_never_links_a_missing_page(tmp_path):
    ctx = _ctx(tmp_path)
    (tmp_path / "copy-audit.html").write_text("an earlier run's page")
    (tmp_path / "benefit.html").write_text("an earlier run's page")
    forget_later_pages(ctx)  # phase 6 runs again
    publish_page(ctx, "integrate.html", _writer(tmp_path, "integrate.html"))
    assert _links(tmp_path, "integrate.html") == ["integrate.html", REPORT[1]]
    # no benefit here (nothing to leave out): copy-audit's page comes next, and integrate's now links it
    publish_page(ctx, "copy-audit.html", _writer(tmp_path, "copy-audit.html"))
    for page in ("integrate.html", "copy-audit.html"):
        assert _links(tmp_path, page) == ["integrate.html", "copy-audit.html", REPORT[1]]
        assert all((tmp_path / href).is_file() for href in _links(tmp_path, page) if href != REPORT[1])
    assert report_pages(tmp_path, ["ws/flux/rmsnorm/run/integrate.html", "ws/x/copy-audit.html"]) == \
        ("integrate.html", "copy-audit.html")


def test_benefit_is_linked_beside_the_integrate_page_it_follows(tmp_path):
    ctx = _ctx(tmp_path)
    forget_later_pages(ctx)
    for page in ("integrate.html", "benefit.html", "copy-audit.html"):
        publish_page(ctx, page, _writer(tmp_path, page))
    assert _links(tmp_path, "integrate.html") == ["integrate.html", "benefit.html", "copy-audit.html", REPORT[1]]
    assert report_pages(tmp_path, ["run/integrate.html", "run/copy-audit.html"]) == \
        ("integrate.html", "benefit.html", "copy-audit.html")
    assert report_pages(tmp_path, ["run/copy-audit.html"]) == ("copy-audit.html",)  # integrate not this run's
