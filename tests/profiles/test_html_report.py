"""The HTML reports are self-contained and show the numbers; when Chromium is installed, it renders them.

Manual check (documented in docs/profiles.md): open the --html file in a browser, or
`chromium --headless --no-sandbox --disable-gpu --screenshot=out.png --window-size=1280,2400 file:///…/report.html`.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from profile_recount import DATA

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    from sdcompile.html.profiles import write_copy_audit_html, write_integrate_html
    from sdcompile.phases.copy_audit.phase import run_copy_audit
    from sdcompile.phases.integrate.phase import run_integrate

    out = tmp_path_factory.mktemp("html")
    eager, compiled = DATA / "multi_rank" / "eager", DATA / "multi_rank" / "compile"
    audit = run_copy_audit(eager, compiled, attention="3d", max_inflation=2.0)
    integ = run_integrate(eager, compiled, op="rmsnorm")
    write_copy_audit_html(audit, out / "copy.html")
    write_integrate_html(integ, out / "integrate.html")
    return {"copy": (audit, out / "copy.html"), "integrate": (integ, out / "integrate.html")}


@pytest.mark.parametrize("kind", ["copy", "integrate"])
def test_self_contained(reports, kind):
    html = reports[kind][1].read_text()
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    assert not re.search(r"https?://|<script|<link|<img|@import|url\(", html)
    assert html.count("<svg") >= 2 and "<style>" in html


def test_copy_report_shows_the_numbers(reports):
    audit, path = reports["copy"]
    html = path.read_text()
    c, e = audit.compile_copies, audit.eager_copies
    assert f"{e.copy.count:,} → {c.copy.count:,}" in html
    assert f"{c.copy.us:,.1f}" in html and f"{audit.inflation.time_ratio:.2f}x" in html
    assert "gate: fail" in html and "advice: A" in html
    assert "inflation compared by time (auto: NPU profiles)" in html
    for g in audit.inflation.grew_most[:3]:
        assert g.name in html and f"{g.delta_us:+,.1f}" in html


def test_integrate_report_shows_the_deltas(reports):
    integ, path = reports["integrate"]
    html = path.read_text()
    for row in integ.diff.by_name[:5]:
        assert row.key in html and f"{row.delta_us:+,.1f}" in html
    assert "layer 2: pass" in html


def test_existing_file_needs_force(reports):
    from sdcompile.html.profiles import write_copy_audit_html
    from sdcompile.util.errors import BadInput

    audit, path = reports["copy"]
    with pytest.raises(BadInput) as info:
        write_copy_audit_html(audit, path)
    assert "already exists" in info.value.message and "--force" in info.value.fix
    write_copy_audit_html(audit, path, force=True)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (manual step in docs/profiles.md)")
def test_chromium_renders_the_report(reports, tmp_path):
    png = tmp_path / "copy.png"
    proc = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1200,1600", f"--screenshot={png}",
         reports["copy"][1].as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000  # a blank page compresses far smaller
