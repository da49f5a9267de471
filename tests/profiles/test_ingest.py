"""Every header variant and cell quirk of kernel_details.csv parses, and every number equals a csv-module recount."""

from __future__ import annotations

import pytest
from profile_recount import DATA, VARIANTS, csv_files, recount

from sdcompile.core.profiles.catalog import load_catalog
from sdcompile.core.profiles.profile import load_profile

CATALOG = load_catalog()


def test_fixtures_carry_the_quirks_they_claim():
    raw = {v: b"".join(p.read_bytes() for p in csv_files(DATA / v)) for v in VARIANTS}
    assert raw["level0_device_blocknum"].startswith(b"\xef\xbb\xbf")  # BOM
    assert b"\r\n" in raw["full_step"] and b"\r\n" not in raw["op_summary"]  # CRLF and LF
    assert b"\t," in raw["level0_short"]  # trailing TAB after the start time
    assert b'\t"' in raw["full_step"]  # quoted start time with its TAB
    assert b'"""81920,4096;8192,512"""' in raw["level0_shapes"]  # shapes keeping literal quotes
    assert b"N/A" in raw["level0_short"] and b",N/A," in raw["op_summary"]
    assert b"Block Num" in raw["level0_device_blocknum"] and b"Block Dim" in raw["level0_short"]
    assert len(csv_files(DATA / "multi_rank" / "eager")) == 2


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("side", ["eager", "compile"])
def test_totals_and_per_kernel_numbers_match_recount(variant, side):
    root = DATA / variant / side
    expected = recount(root)
    profile = load_profile(root, CATALOG)
    assert profile.rows == expected.rows
    assert profile.kernel_us == pytest.approx(float(expected.total), rel=1e-12)
    by_name: dict[str, list] = {}
    for g in profile.groups:
        slot = by_name.setdefault(g.name, [0, 0.0])
        slot[0] += g.count
        slot[1] += g.total_us
    assert set(by_name) == set(expected.by_name)
    for name, (count, total) in expected.by_name.items():
        assert by_name[name][0] == count, name
        assert by_name[name][1] == pytest.approx(float(total), rel=1e-12), name
    by_type: dict[str, int] = {}
    for g in profile.groups:
        by_type[g.op_type] = by_type.get(g.op_type, 0) + g.count
    assert by_type == {t: c for t, (c, _) in expected.by_type.items()}


EXPECTED_VARIANT = {
    "level0_short": "level0 short",
    "level0_device_blocknum": "level0 short +Device_id +Block Num",
    "level0_shapes": "level0 short +Device_id +shapes",
    "full_step": "full +Step Id +Block Num",
    "full_old": "full",
    "op_summary": "op_summary +Device_id +Block Num +shapes",
    "multi_rank": "full +Step Id +Block Num",
}


@pytest.mark.parametrize("variant", VARIANTS)
def test_header_variant_is_recognised(variant):
    profile = load_profile(DATA / variant / "eager", CATALOG)
    assert {r.variant for r in profile.ranks} == {EXPECTED_VARIANT[variant]}


@pytest.mark.parametrize("variant", ["level0_short", "level0_device_blocknum", "full_step", "multi_rank"])
def test_start_times_are_exact_integer_nanoseconds(variant):
    root = DATA / variant / "compile"
    profile = load_profile(root, CATALOG, rows=True)
    got = sorted(v for t in profile.tables for v in t.table["start_ns"].to_pylist())
    expected = sorted(recount(root).starts)
    assert got == expected
    assert all(isinstance(v, int) for v in got[:5])
    # a float64 in microseconds would lose these nanoseconds
    assert any(float(v / 1000) * 1000 != v for v in got)


def test_level0_na_types_are_derived_from_the_name():
    profile = load_profile(DATA / "level0_short" / "compile", CATALOG)
    assert sum(r.missing_types for r in profile.ranks) > 0
    types = {g.name: g.op_type for g in profile.groups}
    assert types["aclnnInplaceCopy_CastAiCore_Cast"] == "Cast"
    assert types["aclnnInplaceCopy_ViewCopyAiCore_ViewCopy"] == "ViewCopy"
    assert types["LayerNorm90"] == "LayerNorm"


def test_na_duration_counts_as_zero_and_is_reported():
    profile = load_profile(DATA / "op_summary" / "eager", CATALOG)
    assert sum(r.missing_durations for r in profile.ranks) == 1


def test_step_selection_and_ranks():
    root = DATA / "multi_rank" / "compile"
    profile = load_profile(root, CATALOG, step=2)
    expected = recount(root, step=2)
    assert profile.rows == expected.rows
    assert profile.kernel_us == pytest.approx(float(expected.total), rel=1e-12)
    assert len(profile.ranks) == 2
    assert profile.steps == (2,)
    assert [r.label.split("_")[0] for r in profile.ranks] == ["worker0", "worker1"]


def test_start_times_with_more_than_three_decimals_are_rounded_to_the_ns(tmp_path):
    path = tmp_path / "kernel_details.csv"
    path.write_bytes(b"Name,Type,Start Time(us),Duration(us)\r\n"
                     b"a,Mul,1718873628493050.1234567\t,1.5\r\nb,Mul,\"1718873628493051.2\t\",2.0\r\nc,Mul,N/A,1\r\n")
    profile = load_profile(path, CATALOG, rows=True)
    assert profile.tables[0].table["start_ns"].to_pylist() == [1718873628493050123, 1718873628493051200, None]
