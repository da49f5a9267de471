"""copy-audit on torch_npu-shaped folders of every header variant: numbers equal a csv-module recount; the gate;
the advice follows the recipe's options with its inputs shown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from profile_recount import DATA, VARIANTS, recount

from sdcompile.phases.copy_audit.phase import run_copy_audit


def _close(a: float, b) -> bool:
    return a == pytest.approx(float(b), rel=1e-12, abs=1e-9)


@pytest.mark.parametrize("variant", VARIANTS)
def test_copy_numbers_equal_recount(variant):
    eager, compiled = DATA / variant / "eager", DATA / variant / "compile"
    report = run_copy_audit(eager, compiled, attention="2d")
    for got, root in ((report.eager_copies, eager), (report.compile_copies, compiled)):
        want = recount(root)
        assert (got.copy.count, got.cast.count, got.layout.count, got.recipe_search.count) == (
            want.copy[0], want.cast[0], want.layout[0], want.seed[0])
        assert _close(got.copy.us, want.copy[1]) and _close(got.cast.us, want.cast[1])
        assert _close(got.layout.us, want.layout[1]) and _close(got.recipe_search.us, want.seed[1])
        assert _close(got.kernel_us, want.total)
        assert got.share == pytest.approx(float(want.copy[1] / want.total), rel=1e-12)
        assert {s.step: (s.copy_count, pytest.approx(float(s.copy_us))) for s in got.per_step} == {
            k: (v[0], float(v[1])) for k, v in want.copy_per_step.items()}
    e, c = recount(eager), recount(compiled)
    assert report.inflation.time_ratio == pytest.approx(float(c.copy[1] / e.copy[1]), rel=1e-12)
    assert report.inflation.count_ratio == pytest.approx(c.copy[0] / e.copy[0])
    grew = {g.name: g.compile_count - g.eager_count for g in report.inflation.grew_most}
    want_grew = {n: c.by_name.get(n, [0])[0] - e.by_name.get(n, [0])[0]
                 for n in set(c.by_name) | set(e.by_name) if n in grew}
    assert grew == want_grew
    assert grew["aclnnInplaceCopy_ViewCopyAiCore_ViewCopy"] > 0
    deltas = [g.delta_us for g in report.inflation.grew_most]
    assert deltas == sorted(deltas, reverse=True)


def test_per_rank_copies_equal_recount():
    report = run_copy_audit(DATA / "multi_rank" / "eager", DATA / "multi_rank" / "compile")
    want = recount(DATA / "multi_rank" / "compile")
    by_file = {path.split("/ASCEND_PROFILER_OUTPUT")[0].rsplit("/", 1)[1]: v for path, v in want.copy_per_file.items()}
    assert {r.rank: r.copy_count for r in report.compile_copies.per_rank} == {k: v[0] for k, v in by_file.items()}
    for r in report.compile_copies.per_rank:
        assert _close(r.copy_us, by_file[r.rank][1])


def test_attention_segments_follow_start_time_order_not_file_order():
    # full_step's rows are shuffled in the file; segments must still be three layers of 6 copies per step
    report = run_copy_audit(DATA / "full_step" / "eager", DATA / "full_step" / "compile")
    segs = report.compile_copies.per_segment
    assert [(s.segment, s.copy_count) for s in segs] == [(1, 12), (2, 12), (3, 12)]
    assert sum(s.copy_us for s in segs) == pytest.approx(report.compile_copies.copy.us)


def test_step_option_audits_one_step():
    report = run_copy_audit(DATA / "full_step" / "eager", DATA / "full_step" / "compile", step=1)
    want = recount(DATA / "full_step" / "compile", step=1)
    assert report.compile_copies.copy.count == want.copy[0]
    assert _close(report.compile_copies.copy.us, want.copy[1])


@pytest.mark.parametrize("attn", ["3d", "2d", None])
def test_remedies_are_a_b_c_in_order_whatever_the_attention(attn):
    report = run_copy_audit(DATA / "full_step" / "eager", DATA / "full_step" / "compile", attention=attn)
    rec = report.recommendation
    assert rec.choice == "A" and rec.offered == ("A", "B", "C")
    assert rec.inputs.copy_share == report.compile_copies.share
    assert any("threshold 2" in r for r in rec.reasons)
    assert [o.id for o in rec.options] == ["A", "B", "C"]
    a, _, c = rec.options
    assert a.title == "fix the patterns" and a.command == "debug"
    assert [s.line for s in c.settings][:2] == ["CompilationConfig.aclgraph_with_compile = True",
                                                "CompilationConfig.aclgraph_only = True"]


def _audit_cli(cli, *args):
    eager, compiled = str(DATA / "full_step" / "eager"), str(DATA / "full_step" / "compile")
    return cli("copy-audit", eager, compiled, "--attn", "3d", *args)


@pytest.mark.parametrize("repo", [False, True])
def test_copy_audit_never_offers_a_torchair_backend(cli, mindiesd_tree, repo):
    """MindIE-SD has no torchair backend choice: neither the text nor the JSON names one as a remedy."""
    extra = ("--repo", str(mindiesd_tree)) if repo else ()
    text = _audit_cli(cli, *extra)
    assert text.exit_code == 0, text.stderr
    doc = _audit_cli(cli, *extra, "--json")
    for out in (text.stdout, doc.stdout):
        assert "torchair" not in out and "npugraph_ex" not in out
    rec = json.loads(doc.stdout)["recommendation"]
    assert rec["offered"] == ["A", "B", "C"] and rec["config"]["from_tree"] is repo
    recommendation = text.stdout[text.stdout.index("Recommendation:"):]
    assert recommendation.index("  A fix the patterns") < recommendation.index("  B VAE eager") \
        < recommendation.index("  C ACLGraph")
    assert "\n        CompilationConfig.aclgraph_with_compile = True\n" in recommendation
    last = text.stdout.rstrip("\n").splitlines()[-1]
    assert last.startswith("INFO: ") and "try A (fix the patterns), then B" in last
    if not repo:
        assert "MindIE-SD 3.1.0's mindiesd/compilation/compiliation_config.py" in recommendation


def test_a_tree_without_aclgraph_fields_gets_no_c(cli, mindiesd_tree):
    config = mindiesd_tree / "mindiesd/compilation/compiliation_config.py"
    config.write_text("\n".join(line for line in config.read_text().splitlines() if "aclgraph" not in line) + "\n")
    report = run_copy_audit(DATA / "full_step" / "eager", DATA / "full_step" / "compile", repo=mindiesd_tree)
    rec = report.recommendation
    assert rec.config.from_tree and rec.config.source == str(config)
    assert rec.offered == ("A", "B")
    c = rec.options[2]
    assert not c.offered and c.missing == ("aclgraph_only", "aclgraph_with_compile") and c.settings == ()
    text = _audit_cli(cli, "--repo", str(mindiesd_tree)).stdout
    assert "not offered: C (ACLGraph for static shapes or large batches): no aclgraph_only, " in text
    assert "CompilationConfig.aclgraph" not in text


def test_no_copy_problem_keeps_the_default_backend():
    # the same profile on both sides: no inflation; a share threshold above the share
    side = DATA / "full_step" / "eager"
    report = run_copy_audit(side, side, attention="3d", share_threshold=0.9)
    assert report.inflation.time_ratio == pytest.approx(1.0)
    assert report.recommendation.choice == "keep"


def test_gate_and_json_via_cli(cli):
    eager, compiled = str(DATA / "level0_shapes" / "eager"), str(DATA / "level0_shapes" / "compile")
    ok = cli("copy-audit", eager, compiled, "--max-inflation", "50", "--json")
    assert ok.exit_code == 0, ok.stderr
    doc = json.loads(ok.stdout)
    assert doc["gate"]["verdict"] == "pass" and doc["verdict"] == "pass"
    want_e, want_c = recount(DATA / "level0_shapes" / "eager"), recount(DATA / "level0_shapes" / "compile")
    assert doc["compile_copies"]["copy"]["count"] == want_c.copy[0]
    assert doc["gate"]["value"] == pytest.approx(float(want_c.copy[1] / want_e.copy[1]))
    bad = cli("copy-audit", eager, compiled, "--max-inflation", "1.2")
    assert bad.exit_code == 1
    assert "gate: copy time inflation" in bad.stdout and "fail" in bad.stdout
    counted = cli("copy-audit", eager, compiled, "--max-inflation", "3", "--inflation-metric", "count", "--json")
    assert counted.exit_code == 0  # 36 / 12 = 3.0 copies: not above 3
    assert json.loads(counted.stdout)["gate"]["value"] == pytest.approx(3.0)


@pytest.mark.parametrize("metric", ["time", "count"])
def test_advice_weighs_the_ratio_the_gate_compares(metric):
    """CPU captures gate on copy counts (their durations swing with load): the advice must not then decide from
    the times, or one profile pair could fail the gate and be told to keep the backend."""
    eager, compiled = DATA / "level0_shapes" / "eager", DATA / "level0_shapes" / "compile"
    probe = run_copy_audit(eager, compiled, attention="3d", share_threshold=1.0)
    time_ratio, count_ratio = probe.inflation.time_ratio, probe.inflation.count_ratio
    assert time_ratio != pytest.approx(count_ratio)
    threshold = (time_ratio + count_ratio) / 2  # one ratio above it, the other below
    report = run_copy_audit(eager, compiled, attention="3d", share_threshold=1.0, metric=metric,
                            inflation_threshold=threshold, max_inflation=threshold)
    gated = report.gate.verdict == "fail"
    assert (report.recommendation.choice == "A") == gated
    assert report.recommendation.offered == (("A", "B", "C") if gated else ())
    assert report.recommendation.reasons[0].startswith(f"copy {metric} inflation")


@pytest.mark.parametrize("cpu", [False, True])
def test_the_copy_share_decides_the_advice_only_when_both_profiles_are_npu_times(tmp_path, cpu):
    """A CPU capture's copy share is CPU time, which swings with the machine's load: one CI run measured Wan's
    at 28% and another at 12% for the same compile. It is shown, but only NPU kernel time can make copies heavy."""
    eager, compiled = DATA / "level0_shapes" / "eager", DATA / "level0_shapes" / "compile"
    if cpu:
        eager, compiled = _as_cpu_capture(eager, tmp_path / "eager"), _as_cpu_capture(compiled, tmp_path / "compile")
    share = run_copy_audit(eager, compiled, attention="3d").compile_copies.share
    assert share > 0
    report = run_copy_audit(eager, compiled, attention="3d", inflation_threshold=float("inf"),
                            share_threshold=share / 2)
    assert report.recommendation.choice == ("keep" if cpu else "A")
    shown = report.recommendation.reasons[1]
    assert shown.startswith(f"compiled copy share {share:.1%} of non-communication kernel time")
    assert ("not weighed: CPU time" in shown) == cpu


def _as_cpu_capture(side: Path, into: Path) -> Path:
    """A copy of an NPU fixture labelled the way `sdcompile profile` labels its CPU captures."""
    import shutil

    from sdcompile.core.profiles.locate import CAPTURE_INFO

    copy = shutil.copytree(side, into)
    for run_dir in copy.glob("*_ascend_pt"):
        (run_dir / CAPTURE_INFO).write_text(json.dumps({"source": "cpu capture", "device": "cpu"}), encoding="utf-8")
    return copy


@pytest.mark.parametrize(("cpu_sides", "want"),
                         [((), "time"), (("eager", "compile"), "count"), (("compile",), "count")])
def test_auto_metric_compares_time_on_npu_profiles_and_counts_when_a_side_is_a_cpu_capture(tmp_path, cpu_sides, want):
    sides = {}
    for side in ("eager", "compile"):
        fixture = DATA / "level0_shapes" / side
        sides[side] = _as_cpu_capture(fixture, tmp_path / side) if side in cpu_sides else fixture
    report = run_copy_audit(sides["eager"], sides["compile"], attention="3d", max_inflation=100)
    assert report.gate.metric == want
    assert report.gate.value == pytest.approx(report.inflation.time_ratio if want == "time"
                                              else report.inflation.count_ratio)
    assert report.gate.metric_from.startswith("auto: ")
    assert ("CPU capture" in report.gate.metric_from) == bool(cpu_sides)
    forced = run_copy_audit(sides["eager"], sides["compile"], attention="3d", metric="time")
    assert (forced.gate.metric, forced.gate.metric_from) == ("time", "--inflation-metric")


COPY_TYPES = ("TensorMove", "ViewCopy", "StridedSlice", "AsStrided", "Slice", "Transpose")


def _without_copies(side: Path, out: Path) -> Path:
    """`side` with every copy kernel (catalogs/kernels.toml's copy family) taken out of its kernel_details.csv."""
    import csv
    import shutil

    shutil.copytree(side, out)
    for table in out.rglob("kernel_details.csv"):
        with table.open(newline="") as f:
            rows = list(csv.reader(f))
        head = rows[0]
        name, kind = head.index("Name"), head.index("Type")
        kept = [r for r in rows[1:] if r[kind] not in COPY_TYPES and not r[name].startswith("aclnnInplaceCopy_")]
        assert len(kept) < len(rows) - 1  # the fixture has copies to take out
        with table.open("w", newline="") as f:
            csv.writer(f).writerows([head, *kept])
    return out


def test_the_last_line_is_the_verdict_and_0_to_0_copies_are_no_ratio(cli, tmp_path):
    eager, compiled = str(DATA / "level0_shapes" / "eager"), str(DATA / "level0_shapes" / "compile")
    bad = cli("copy-audit", eager, compiled, "--max-inflation", "1.2", "--inflation-metric", "count")
    assert bad.exit_code == 1
    last = bad.stdout.strip().splitlines()[-1]
    assert last.startswith("FAIL: copy kernels 12 -> 36, copy count inflation 3.00x > max 1.2 — "), last
    ok = cli("copy-audit", eager, compiled, "--max-inflation", "3", "--inflation-metric", "count")
    assert ok.stdout.strip().splitlines()[-1].startswith("PASS: copy kernels 12 -> 36, copy count inflation 3.00x <= "
                                                         "max 3 — ")
    ungated = cli("copy-audit", eager, compiled).stdout.strip().splitlines()[-1]
    assert ungated.startswith("INFO: ") and "no gate: --max-inflation not set" in ungated

    side = DATA / "full_step" / "eager"
    none_e, none_c = _without_copies(side, tmp_path / "eager"), _without_copies(side, tmp_path / "compile")
    for metric in ("count", "time"):
        out = cli("copy-audit", str(none_e), str(none_c), "--max-inflation", "2", "--inflation-metric", metric)
        assert out.exit_code == 0, out.stderr
        assert out.stdout.strip().splitlines()[-1].startswith(
            f"PASS: copy kernels 0 -> 0, copy {metric} inflation n/a <= max 2 — "), out.stdout[-500:]
        assert f"gate: copy {metric} inflation n/a vs max 2: pass" in out.stdout
        assert "0.00x" not in out.stdout, [line for line in out.stdout.splitlines() if "0.00x" in line]
    doc = json.loads(cli("copy-audit", str(none_e), str(none_c), "--json").stdout)
    assert doc["inflation"]["count_undefined"] is True and doc["gate"]["undefined"] is True
