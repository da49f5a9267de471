"""benefit on off/on profile pairs written as torch_npu writes them: the ledger equals a csv-module recount, each
cause R1-R5 is named from where its kernels sit, and the verdict follows the net, the threshold and the ceiling."""

from __future__ import annotations

import csv
import json
from collections import defaultdict

import pytest
from profile_pairs import LAYERS, STEPS, write_pair
from profile_recount import DATA, VARIANTS

from sdcompile.core.profiles.catalog import load_catalog
from sdcompile.core.profiles.ledger import TIME
from sdcompile.core.profiles.profile import load_profile
from sdcompile.core.profiles.side_effects import BETWEEN, ELSEWHERE, INPUT, OUTPUT, R1, R2, R3, R4, R5
from sdcompile.phases.benefit.phase import run_benefit
from sdcompile.phases.benefit.results import BOOKKEEPING, GAINS, LOSES, NO_FUSION, WITHIN

SITES = 2 * LAYERS  # fused launches per step when every site is replaced


def recount(folder) -> dict[str, list[float]]:
    """Name -> [launches, us] per step, read with the csv module (the recipe's compare_profiles.py way)."""
    out: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    with open(folder / "kernel_details.csv", newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            out[row["Name"]][0] += 1 / STEPS
            out[row["Name"]][1] += float(row["Duration(us)"]) / STEPS
    return out


@pytest.mark.parametrize("scenario", ["clean", "r1", "r2", "r3", "r5", "bookkeeping"])
def test_the_ledger_is_a_recount_of_the_two_files(tmp_path, scenario):
    off, on = write_pair(tmp_path, scenario)
    report = run_benefit(off, on, op="rope")
    a, b = recount(off), recount(on)
    appeared = sum(b[k][1] - a.get(k, [0, 0])[1] for k in b if b[k][0] > a.get(k, [0, 0])[0])
    vanished = sum(a[k][1] - b.get(k, [0, 0])[1] for k in a if a[k][0] > b.get(k, [0, 0])[0])
    ledger = report.ledger
    assert ledger.measure == TIME and report.device == "npu"
    assert ledger.time.appeared == pytest.approx(appeared) and ledger.time.vanished == pytest.approx(vanished)
    assert ledger.net == pytest.approx(appeared - vanished)
    assert ledger.step_total == pytest.approx(sum(v[1] for v in a.values()))
    outside = {"MatMulV3", "FlashAttentionScore"}  # the region: every kernel a vector fusion can remove
    assert ledger.ceiling == pytest.approx(sum(v[1] for k, v in a.items() if k.split("_")[-1] not in outside))
    for row in ledger.rows:
        assert (row.off_count, row.on_count) == (pytest.approx(a.get(row.key, [0])[0]),
                                                 pytest.approx(b.get(row.key, [0])[0]))


@pytest.mark.parametrize(("scenario", "cause", "sides", "neighbours"), [
    ("r1", R1, {INPUT, OUTPUT}, ("MatMulV3", "RotaryPositionEmbedding")),
    ("r2", R2, {INPUT}, ("MatMulV3", "RotaryPositionEmbedding")),
    ("r3", R3, {BETWEEN}, ("RmsNorm", "RotaryPositionEmbedding")),
])
def test_a_side_effect_is_placed_by_its_neighbours_and_named(tmp_path, scenario, cause, sides, neighbours):
    report = run_benefit(*write_pair(tmp_path, scenario), op="rope")
    assert [c.code for c in report.causes] == [cause]
    (effect,) = report.side_effects
    assert effect.cause == cause and {p.side for p in effect.placements} == sides
    assert (effect.placements[0].before_type, effect.placements[0].after_type) == neighbours
    assert effect.per_site == pytest.approx(2.0 if cause == R1 else 1.0)  # R1: a cast up and one back per site
    assert effect.size_ratio > 0.25  # x-sized, not a table's
    assert report.causes[0].launches == pytest.approx((2 if cause == R1 else 1) * SITES)


def test_a_copy_on_another_stream_is_not_taken_for_the_fused_kernels_input(tmp_path):
    """The copy starts while the fused kernel runs, on stream 7: in global time order it sits right after the fused
    kernel (where the recipe's script would put it); on its own stream it has no fused neighbour."""
    report = run_benefit(*write_pair(tmp_path, "other_stream"), op="rope")
    (effect,) = report.side_effects
    assert effect.side == ELSEWHERE and effect.cause == "" and report.causes == ()


def test_r4_from_fewer_fused_launches_than_hits_and_the_fallback_print(tmp_path):
    off, on = write_pair(tmp_path, "r4")
    log = tmp_path / "run.log"
    log.write_text("step 1\n[residual_gate_add] fallback (ndim)\nstep 2\n[residual_gate_add] fallback (ndim)\n")
    report = run_benefit(off, on, op="rope", hits=SITES, log=log)
    (r4,) = report.causes
    assert r4.code == R4 and r4.launches == pytest.approx(SITES / 2)  # every other site fell back
    assert r4.fallback_lines == ("[residual_gate_add] fallback (ndim)",)
    assert run_benefit(off, on, op="rope", hits=SITES / 2).causes == ()  # as many launches as hits: no R4


def test_r5_and_the_threshold(tmp_path):
    off, on = write_pair(tmp_path, "r5")
    report = run_benefit(off, on, op="rope")
    assert [c.code for c in report.causes] == [R5] and report.side_effects == ()
    assert report.ledger.net > 0 and report.verdict == WITHIN  # 2.3% of the step, under the 3% default
    assert run_benefit(off, on, op="rope", max_regression=1.0).verdict == LOSES


def test_gains_without_a_cause(tmp_path):
    report = run_benefit(*write_pair(tmp_path, "clean"), op="rope")
    assert report.verdict == GAINS and report.causes == () and report.side_effects == ()


def test_the_cli_fails_closed_on_a_gain_above_the_region(tmp_path, cli):
    off, on = write_pair(tmp_path, "bookkeeping")
    assert run_benefit(off, on, op="rope").verdict == BOOKKEEPING
    result = cli("benefit", str(off), str(on), "--op", "rope")
    assert result.exit_code == 1
    assert result.stdout.splitlines()[-1].startswith("FAIL: benefit --op rope: a gain of")
    assert "bookkeeping error" in result.stdout.splitlines()[-1]


def test_the_cli_json_and_its_exit_codes(tmp_path, cli):
    off, on = write_pair(tmp_path, "r1")
    result = cli("benefit", str(off), str(on), "--op", "rope", "--json")
    doc = json.loads(result.stdout)
    assert result.exit_code == 1 and doc["verdict"] == LOSES
    assert doc["ledger"]["net"] == pytest.approx(doc["ledger"]["time"]["appeared"] - doc["ledger"]["time"]["vanished"])
    assert [c["code"] for c in doc["causes"]] == [R1]
    same = cli("benefit", str(off), str(off), "--op", "rope")
    assert same.exit_code == 1 and "launches no fused kernel" in same.stdout.splitlines()[-1]
    assert run_benefit(off, off, op="rope").verdict == NO_FUSION
    # the fusion on both sides (another group fuses the same sites when this one is left out): weighed, said so
    both = run_benefit(on, on, op="rope")
    assert both.verdict == GAINS and both.ledger.net == 0 and any("as often" in n for n in both.notes)
    bad = cli("benefit", str(off), str(on), "--max-regression", "-1")
    assert bad.exit_code == 2 and len(bad.stderr.strip().splitlines()) == 1 and "--max-regression" in bad.stderr
    missing = cli("benefit", str(off))
    assert missing.exit_code == 2 and "OFF and ON" in missing.stderr


@pytest.mark.parametrize("width", [80, 200])
def test_the_report_reads_at_80_and_200_columns(tmp_path, width):
    from sdcompile.phases.benefit.render import render_benefit, verdict
    from sdcompile.rendering.output import rendered

    report = run_benefit(*write_pair(tmp_path, "r1"), op="rope")
    lines = rendered(render_benefit, report, width).splitlines()
    assert lines[-1] == verdict(report).line  # the verdict is one line, last, whatever the width
    # every line fits but a kernel name longer than the width (aclnn names run to 82 characters), never broken
    assert all(len(line) <= width or " " not in line.strip() for line in lines[:-1])
    assert any(line.startswith("R1 dtype promotion") for line in lines)
    text = " ".join(line.strip() for line in lines)  # the table folds a cell over lines at 80 columns
    assert "input side (MatMulV3 -> it -> RotaryPositionEmbedding)" in text


def test_the_html_report_shows_the_ledger_and_each_cause(tmp_path, cli):
    off, on = write_pair(tmp_path, "r1")
    page = tmp_path / "benefit.html"
    result = cli("benefit", str(off), str(on), "--op", "rope", "--html", str(page))
    assert result.exit_code == 1 and page.is_file()  # R1 makes this fusion lose: the page is written all the same
    html = page.read_text(encoding="utf-8")
    for text in ("net per step", "ceiling (the step&#39;s vector work)", "R1 dtype promotion",
                 "8 input side (MatMulV3 → it → RotaryPositionEmbedding)", "verdict: loses", "<svg"):
        assert text in html, text
    again = cli("benefit", str(off), str(on), "--op", "rope", "--html", str(page))
    assert again.exit_code == 2 and "--force" in again.stderr  # never clobbers a file without --force


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_header_variant_is_weighed(variant):
    """The profile fixtures of every header variant (with and without shapes, start times, steps, streams; one rank
    or two): the compiled run as the on side. Launch counts are per step, whatever the variant records."""
    eager, compiled = DATA / variant / "eager", DATA / variant / "compile"
    report = run_benefit(eager, compiled, op="rmsnorm")
    assert report.verdict in (GAINS, WITHIN, LOSES)
    fused = next(r for r in report.ledger.rows if r.op_type == "RmsNorm")
    assert fused.off_count == 0 and fused.on_count > 0
    steps = max(len(report.on.steps), 1)
    launches = sum(g.count for g in load_profile(compiled, load_catalog()).groups if g.op_type == "RmsNorm")
    assert fused.on_count == pytest.approx(launches / steps)
    for effect in report.side_effects:  # placed where the rows can be ordered, listed unordered otherwise
        assert effect.placements or effect.side == "unordered"
