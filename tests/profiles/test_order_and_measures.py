"""Row order (every start-time spelling; file order said when times are absent, Excel-mangled or tied), the
measures (copy share without communication, integrate --op in proportion, per-layer on both sides, unknown
source) and bad input (durations, catalog field types, --step ranges, Step Id N/A)."""

from __future__ import annotations

import io
import json
import random

import pytest
from layouts import ATTN, COPY, KERNEL_HEADER, MATMUL, MEAN, POWS, RMSNORM, RSQRT, kernel_csv, layers, rows
from rich.console import Console

from sdcompile.core.profiles.catalog import load_catalog
from sdcompile.core.profiles.profile import UNKNOWN_SOURCE, load_profile
from sdcompile.phases.copy_audit.phase import run_copy_audit
from sdcompile.phases.copy_audit.render import render_copy_audit
from sdcompile.phases.integrate.phase import run_integrate
from sdcompile.util.errors import BadInput

CAT = load_catalog()
# copies grow layer by layer (1, 2, 3 after the k-th attention), so a wrong order changes the segments
GROWING = [MATMUL, ATTN, COPY] + [MATMUL, ATTN, COPY, COPY] + [MATMUL, ATTN, COPY, COPY, COPY]


def _shuffled(table):
    shuffled = list(table)
    random.Random(7).shuffle(shuffled)
    return shuffled


@pytest.mark.parametrize("spelling", ["Start Time(us)", "Task Start Time(us)", "Task Start Time"])
def test_every_start_time_spelling_orders_shuffled_rows(tmp_path, spelling):
    header = [spelling if h == "Start Time(us)" else h for h in KERNEL_HEADER]
    path = kernel_csv(tmp_path / "kernel_details.csv", _shuffled(rows(GROWING)), header=header)
    report = run_copy_audit(path, path)
    assert [(s.segment, s.copy_count) for s in report.compile_copies.per_segment] == [(1, 1), (2, 2), (3, 3)]
    assert report.compile_copies.ordering == "exact start time"
    assert not any("file order" in n for n in report.notes)


@pytest.mark.parametrize(("start", "ordering"), [("excel", "start times lossy"), ("tied", "start times all tied")])
def test_lossy_or_tied_start_times_keep_file_order_and_say_so(tmp_path, start, ordering):
    path = kernel_csv(tmp_path / "kernel_details.csv", rows(GROWING), start=start)
    if start == "excel":
        assert "1.71887E+15" in path.read_text()
    report = run_copy_audit(path, path)
    assert report.compile_copies.ordering == ordering
    assert [(s.segment, s.copy_count) for s in report.compile_copies.per_segment] == [(1, 1), (2, 2), (3, 3)]
    assert any(n.startswith(f"warning: eager: rows kept in file order ({ordering})") for n in report.notes)
    out = io.StringIO()
    render_copy_audit(Console(file=out, width=200), report)
    assert f"in file order ({ordering})" in out.getvalue() and "exact start time" not in out.getvalue()


def test_no_start_column_is_file_order(tmp_path):
    header = [h for h in KERNEL_HEADER if h != "Start Time(us)"]
    path = kernel_csv(tmp_path / "kernel_details.csv", rows(GROWING), header=header)
    report = run_copy_audit(path, path)
    assert report.compile_copies.ordering == "no start-time column"


def test_copy_share_leaves_communication_out(tmp_path):
    hccl = ("hcom_allReduce__586_0_1", "hcom_allReduce_", "HCCL")
    table = rows([MATMUL, COPY, hccl, hccl], dur_ns=10_000)
    path = kernel_csv(tmp_path / "kernel_details.csv", table)
    durations = [r.dur_ns / 1000 for r in table]
    report = run_copy_audit(path, path)
    b = report.compile_copies
    assert b.communication_us == pytest.approx(durations[2] + durations[3])
    assert b.share == pytest.approx(durations[1] / (durations[0] + durations[1]))
    assert "non-communication kernel time" in report.recommendation.reasons[1]


def _norm_run(path, fused: int, chains: int):
    """A run with `fused` RmsNorm kernels and `chains` eager RMSNorm chains (Pows, ReduceMean, Rsqrt)."""
    return kernel_csv(path, rows([RMSNORM] * fused + [POWS, MEAN, RSQRT] * chains))


@pytest.mark.parametrize(("eager", "compiled", "verdict", "outcome"), [
    ((112, 59), (114, 59), "fail", "chain stayed"),  # two ranks of one eager run: a stage with more norms
    ((0, 12), (12, 0), "pass", "replaced"),
    ((0, 12), (12, 11), "fail", "chain shrank too little"),
    ((12, 12), (12, 0), "fail", "chain shrank alone"),
    ((226, 0), (226, 0), "fail", "unchanged"),
])
def test_integrate_op_passes_only_on_a_proportional_replacement(tmp_path, eager, compiled, verdict, outcome):
    e = _norm_run(tmp_path / "e" / "kernel_details.csv", *eager)
    c = _norm_run(tmp_path / "c" / "kernel_details.csv", *compiled)
    check = run_integrate(e, c, op="rmsnorm").op_check
    assert (check.verdict, check.outcome) == (verdict, outcome)
    assert (check.fused_eager, check.fused_compile) == (eager[0], compiled[0])
    assert "grew: 226 -> 226" not in check.reason


def test_the_same_fused_launches_and_no_chain_pass_only_where_the_model_fuses_the_op_itself(tmp_path):
    """A model that calls the fused op in eager (diffusers' NPU branch) shows the same RmsNorm launches on both sides
    and no chain: right when scaffold found every site fused by the model, a pattern that did nothing otherwise."""
    from sdcompile.core.profiles.catalog import load_catalog
    from sdcompile.core.profiles.diff import check_op
    from sdcompile.core.profiles.profile import load_profile

    catalog = load_catalog(None)
    e = load_profile(_norm_run(tmp_path / "e" / "kernel_details.csv", 226, 0), catalog)
    c = load_profile(_norm_run(tmp_path / "c" / "kernel_details.csv", 226, 0), catalog)
    rmsnorm = catalog.resolve_op("rmsnorm")
    told = check_op(rmsnorm, e, c, fused_by_model=True)
    assert (told.verdict, told.outcome) == ("pass", "fused in eager") and "fused by the model" in told.reason
    assert (check_op(rmsnorm, e, c).verdict, check_op(rmsnorm, e, c).outcome) == ("fail", "unchanged")
    for fused, chains in ((226, 1), (225, 0)):  # a chain grown, or fewer fused launches: never the model's doing
        other = load_profile(_norm_run(tmp_path / f"c{fused}{chains}" / "kernel_details.csv", fused, chains), catalog)
        assert check_op(rmsnorm, e, other, fused_by_model=True).verdict == "fail"
    # the signature's kernels from code that is none of the op's sites, as many or fewer compiled: still the model's
    with_others = load_profile(_norm_run(tmp_path / "e6" / "kernel_details.csv", 226, 6), catalog)
    for chains in (6, 4):
        other = load_profile(_norm_run(tmp_path / f"o{chains}" / "kernel_details.csv", 226, chains), catalog)
        told = check_op(rmsnorm, with_others, other, fused_by_model=True)
        assert (told.verdict, told.outcome) == ("pass", "fused in eager"), told.reason
        assert "the chain's kernels on either side are other code's" in told.reason
        assert check_op(rmsnorm, with_others, other).verdict == "fail"  # without scaffold's word: not a pass


def test_per_layer_section_shows_both_sides(tmp_path):
    e = kernel_csv(tmp_path / "e" / "kernel_details.csv", rows(GROWING))
    c = kernel_csv(tmp_path / "c" / "kernel_details.csv", rows([MATMUL, COPY, COPY]))
    report = run_copy_audit(e, c)
    out = io.StringIO()
    render_copy_audit(Console(file=out, width=250), report)
    text = out.getvalue()
    assert "eager: 3 segment(s), ordered by exact start time" in text
    assert "compile: no attention kernels" in text


def test_a_bare_csv_is_of_unknown_source_unless_its_data_shows_it(tmp_path):
    unknown = [(n, t, "N/A") for n, t, _ in GROWING]
    bare = kernel_csv(tmp_path / "bare" / "kernel_details.csv", rows(unknown))
    cpu = kernel_csv(tmp_path / "cpu" / "kernel_details.csv", rows([(n, t, "CPU") for n, t, _ in GROWING]))
    npu = kernel_csv(tmp_path / "npu" / "kernel_details.csv", rows(GROWING))
    assert load_profile(bare, CAT).source == UNKNOWN_SOURCE
    report = run_copy_audit(bare, npu)
    assert report.gate.metric == "count" and "unknown source" in report.gate.metric_from
    assert any(n.startswith("warning: eager: source unknown") for n in report.notes)
    assert run_copy_audit(cpu, cpu).gate.metric == "count"
    assert run_copy_audit(npu, npu).gate.metric == "time"


@pytest.mark.parametrize("cell", ["-1.500", "inf", "nan"])
def test_negative_or_non_finite_durations_are_bad_input(tmp_path, cli, cell):
    path = kernel_csv(tmp_path / "kernel_details.csv", rows([MATMUL, COPY, COPY]))
    lines = path.read_bytes().split(b"\r\n")
    cells = lines[3].split(b",")
    cells[KERNEL_HEADER.index("Duration(us)")] = cell.encode()
    lines[3] = b",".join(cells)
    path.write_bytes(b"\r\n".join(lines))
    res = cli("copy-audit", str(path), str(path))
    assert res.exit_code == 2, res.stderr
    assert f"{path}, line 4: Duration(us) is" in res.stderr and "negative or not finite" in res.stderr


def test_a_catalog_field_of_the_wrong_type_is_bad_input(tmp_path, cli):
    user = tmp_path / "mine.toml"
    user.write_text('[[family]]\nname = "mine"\nrole = "layout"\n[[family.rule]]\nlabel = "x"\ntypes = "TransData"\n')
    path = kernel_csv(tmp_path / "kernel_details.csv", rows([MATMUL, COPY]))
    res = cli("copy-audit", str(path), str(path), "--catalog", str(user))
    assert res.exit_code == 2
    assert ("[[family]] #1 ('mine') rule #1: `types` must be a list of strings, got str 'TransData'"
            in res.stderr) and 'types = ["A", "B"]' in res.stderr


def test_step_errors_show_the_range_and_na_steps_are_noted(tmp_path):
    table = [r for step in range(1, 407) for r in layers(1, [COPY], step=step)]
    table += rows([COPY, COPY], step=None, t0=table[-1].start_ns + 10_000)
    path = kernel_csv(tmp_path / "kernel_details.csv", table)
    with pytest.raises(BadInput) as info:
        load_profile(path, CAT, step=999)
    assert "steps present: 1-406 (406 steps)" in info.value.message and "405" not in info.value.message
    report = run_copy_audit(path, path)
    assert sum(s.copy_count for s in report.compile_copies.per_step) == 406
    assert report.compile_copies.copy.count == 408
    assert any("2 row(s) with Step Id N/A, counted in the totals but in no row of the per-step table" in n
               for n in report.notes)


def test_json_carries_the_typed_fields(tmp_path, cli):
    path = kernel_csv(tmp_path / "kernel_details.csv", rows(GROWING), start="tied")
    doc = json.loads(cli("copy-audit", str(path), str(path), "--json").stdout)
    assert doc["compile_copies"]["ordering"] == "start times all tied"
    assert doc["compile_copies"]["segment_status"] == "segments"
    assert doc["compiled"]["ranks"][0]["ordering"] == "start times all tied"


def test_start_times_as_nanoseconds_equal_pyarrows_decimal_arithmetic():
    """The reader takes each start time's nanoseconds from the decimal's unscaled integer; it must equal multiplying
    by 1000 and casting, chunk offsets, nulls and negative values included, and give way where int64 cannot hold it."""
    from decimal import Decimal

    import pyarrow as pa
    import pyarrow.compute as pc

    from sdcompile.core.profiles.read import exact_start_ns

    start = pa.decimal128(22, 3)
    rng = random.Random(3)
    cells = [Decimal(f"{rng.randint(1_600_000_000_000_000, 1_800_000_000_000_000)}.{rng.randint(0, 999):03d}")
             for _ in range(200)]
    cells[17] = None
    cells[40] = Decimal("-1.500")
    column = pa.chunked_array([pa.array(cells[:120], start).slice(3), pa.array(cells[120:], start).slice(5, 60)])
    expected = pc.cast(pc.multiply(column, pa.scalar(Decimal(1000), pa.decimal128(5, 0))), pa.int64())
    got = exact_start_ns(column)
    assert got.type == pa.int64() and got.null_count == 1 and got.equals(expected)
    beyond = pa.array([Decimal("9999999999999999999.999")], start)  # 1e22 ns: no int64, so arrow's cast says so
    with pytest.raises(BadInput, match="Start Time"):
        exact_start_ns(beyond)
