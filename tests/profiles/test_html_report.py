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
# `make test` installs it where it can (root with apt-get, `make browser`); elsewhere these checks skip, saying so
SKIP_WHY = "chromium not installed: `make browser` installs it as root with apt-get (or see docs/profiles.md)"


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


@pytest.mark.skipif(CHROMIUM is None, reason=SKIP_WHY)
def test_chromium_renders_the_report(reports, tmp_path):
    png = tmp_path / "copy.png"
    proc = _chromium(tmp_path, "--window-size=1200,1600", f"--screenshot={png}", reports["copy"][1].as_uri())
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000  # a blank page compresses far smaller


# Measured in the page by Chromium itself (a test-only copy of the report with this script added): the page does
# not scroll sideways, and no two texts of a chart overlap or leave the chart.
LAYOUT_PROBE = """<script>
addEventListener("load", () => {
  const problems = [];
  const page = document.documentElement;
  if (page.scrollWidth > innerWidth + 1) problems.push(`page ${page.scrollWidth}px wide in a ${innerWidth}px window`);
  const hit = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1 &&
                        Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 1;
  document.querySelectorAll("svg").forEach((svg, i) => {
    const box = svg.getBoundingClientRect();
    const texts = [...svg.querySelectorAll("text")].map(t => [t.textContent, t.getBoundingClientRect()]);
    texts.forEach(([text, r], j) => {
      if (r.left < box.left - 1 || r.right > box.right + 1) problems.push(`chart ${i}: "${text}" leaves the chart`);
      texts.slice(j + 1).forEach(([other, q]) => {
        if (hit(r, q)) problems.push(`chart ${i}: "${text}" / "${other}"`);
      });
    });
  });
  const out = document.createElement("pre");
  out.id = "layout-problems";
  out.textContent = JSON.stringify(problems);
  document.body.appendChild(out);
});
</script>"""


def _chromium(tmp_path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'profile'}", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(CHROMIUM is None, reason=SKIP_WHY)
@pytest.mark.parametrize("width", [700, 1400])
@pytest.mark.parametrize("kind", ["copy", "integrate"])
def test_in_chromium_nothing_overlaps_and_the_page_fits_the_window(reports, kind, width, tmp_path):
    import json

    probe = tmp_path / f"{kind}.html"
    probe.write_text(reports[kind][1].read_text().replace("</body>", LAYOUT_PROBE + "</body>"))
    proc = _chromium(tmp_path, f"--window-size={width},2000", "--virtual-time-budget=2000", "--dump-dom",
                     probe.as_uri())
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = re.search(r'<pre id="layout-problems">(.*?)</pre>', proc.stdout, re.S)
    assert found, proc.stdout[-2000:]
    assert json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&")) == []


@pytest.mark.skipif(CHROMIUM is None, reason=SKIP_WHY)
def test_the_layout_probe_sees_overlapping_labels_and_a_page_wider_than_the_window(tmp_path):
    # what the reports looked like before: a value written over its label, and a fixed-width chart
    page = tmp_path / "bad.html"
    page.write_text('<!DOCTYPE html><html><body><svg width="1200" height="40"><text x="10" y="20">kernel name</text>'
                    '<text x="30" y="20">+1.7</text></svg>' + LAYOUT_PROBE + "</body></html>")
    proc = _chromium(tmp_path, "--window-size=700,800", "--virtual-time-budget=2000", "--dump-dom", page.as_uri())
    found = re.search(r'<pre id="layout-problems">(.*?)</pre>', proc.stdout, re.S)
    problems = found.group(1)
    assert "page 1" in problems and "wide in a 700px window" in problems
    assert "kernel name" in problems and "+1.7" in problems


def test_a_tiny_delta_stays_a_short_bar_and_charts_scale_to_their_container():
    from sdcompile.html.svg import BAR_W, diverging_bars

    svg = diverging_bars([("aclnnInplaceCopy_ViewCopyAiCore_ViewCopy", 1.7)], floor=200.0)
    (width,) = [float(w) for w in re.findall(r'<rect x="[\d.]+" y="\d+" width="([\d.]+)"', svg)]
    assert width < BAR_W / 2 * 0.02  # 1.7 of a 200 us floor: under 1% of the half-width
    assert "full bar = 200.0 (the scale's floor)" in svg
    alone = diverging_bars([("k", 1.7)])
    (full,) = [float(w) for w in re.findall(r'<rect x="[\d.]+" y="\d+" width="([\d.]+)"', alone)]
    assert full > BAR_W / 2 * 0.5  # without a floor the only bar spans its side
    assert re.match(r'<svg viewBox="0 0 \d+ \d+" width="\d+" height="\d+" class="chart"', svg)


def test_the_copy_charts_count_kernels_when_the_gate_does(tmp_path):
    from sdcompile.html.profiles import copy_audit_context
    from sdcompile.phases.copy_audit.phase import run_copy_audit

    eager, compiled = DATA / "multi_rank" / "eager", DATA / "multi_rank" / "compile"
    by_count = copy_audit_context(run_copy_audit(eager, compiled, attention="3d", metric="count"),
                                  subject="wan / rmsnorm")
    by_time = copy_audit_context(run_copy_audit(eager, compiled, attention="3d", metric="time"))
    charts = {s["heading"]: s["svg"] for s in by_count["sections"] if s["svg"]}
    assert "(kernels)" in charts["Copy breakdown"] and "(us)" not in charts["Copy breakdown"]
    assert "(us)" in {s["heading"]: s["svg"] for s in by_time["sections"] if s["svg"]}["Copy breakdown"]
    assert by_count["title"].startswith("sdcompile copy-audit — wan / rmsnorm — ")
    assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", by_count["generated"])
