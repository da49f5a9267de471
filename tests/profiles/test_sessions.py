"""Sessions, ranks and slices as torch_npu and msprof lay them out: several sessions of one rank are not several
ranks, ranks without kernel data are listed, msprof's size slices are one rank, and a folder or a broken symlink
where the kernel file belongs is exit 2."""

from __future__ import annotations

import csv
import json
from decimal import Decimal

import pytest
from layouts import ATTN, COPY, MATMUL, layers, msprof_export, rows, torch_npu_session

from sdcompile.core.profiles.catalog import load_catalog
from sdcompile.core.profiles.profile import load_profile
from sdcompile.util.errors import BadInput

CAT = load_catalog()
LAYER = [MATMUL, ATTN, COPY, COPY]


def _two_sessions_of_rank0_and_rank1(root):
    """The real run that read as three ranks: rank 0 profiled twice (two sessions), rank 1 once; 16 copies each."""
    torch_npu_session(root, rank=0, timestamp="20250601101010123", pid=4100, table=layers(8, LAYER))
    torch_npu_session(root, rank=0, timestamp="20250601111111456", pid=4200, table=layers(8, LAYER))
    torch_npu_session(root, rank=1, timestamp="20250601101010789", pid=4101, host="node1", table=layers(8, LAYER))
    return root


def _two_ranks(root):
    torch_npu_session(root, rank=0, timestamp="20250602101010123", table=layers(8, LAYER))
    torch_npu_session(root, rank=1, timestamp="20250602101010456", host="node1", table=layers(8, LAYER))
    return root


def test_several_sessions_of_one_rank_are_refused_with_the_list(tmp_path):
    eager = _two_sessions_of_rank0_and_rank1(tmp_path / "eager")
    with pytest.raises(BadInput) as info:
        load_profile(eager, CAT)
    text = info.value.one_line()
    assert "rank 0 has 2 profiling sessions" in text
    assert "20250601101010123 (node0_4100_20250601101010123_ascend_pt)" in text and "20250601111111456" in text
    assert "--session latest" in text and "--rank" in text


@pytest.mark.parametrize(("session", "kept"), [(("latest",), "20250601111111456"),
                                               (("20250601101010",), "20250601101010123")])
def test_session_picks_one_session_per_rank(tmp_path, session, kept):
    profile = load_profile(_two_sessions_of_rank0_and_rank1(tmp_path / "eager"), CAT, session=session)
    assert sorted((r.rank_id, r.session) for r in profile.ranks) == [(0, kept), (1, "20250601101010789")]
    assert [(x.rank_id, x.why) for x in profile.left_out] == [(0, "--session")]
    assert {r.level for r in profile.ranks} == {"Level1"}


def test_rank_selects_one_rank(tmp_path):
    eager = _two_sessions_of_rank0_and_rank1(tmp_path / "eager")
    profile = load_profile(eager, CAT, rank=1)
    assert [r.rank_id for r in profile.ranks] == [1] and len(profile.left_out) == 2
    with pytest.raises(BadInput, match=r"--rank 5 is not in the profile; ranks present: 0-1"):
        load_profile(eager, CAT, rank=5)
    with pytest.raises(BadInput, match="rank 0 has 2 profiling sessions"):
        load_profile(eager, CAT, rank=0)  # one rank, still two sessions of it


def test_copy_audit_no_longer_sees_a_spurious_inflation(tmp_path, cli):
    eager = _two_sessions_of_rank0_and_rank1(tmp_path / "eager")
    compiled = _two_ranks(tmp_path / "compile")
    refused = cli("copy-audit", str(eager), str(compiled), "--max-inflation", "1.2")
    assert refused.exit_code == 2 and "rank 0 has 2 profiling sessions" in refused.stderr
    res = cli("copy-audit", str(eager), str(compiled), "--max-inflation", "1.2", "--session", "latest", "--json")
    assert res.exit_code == 0, res.stderr
    doc = json.loads(res.stdout)
    assert (doc["eager_copies"]["copy"]["count"], doc["compile_copies"]["copy"]["count"]) == (32, 32)
    assert doc["gate"]["value"] == pytest.approx(1.0, rel=1e-3) and doc["gate"]["verdict"] == "pass"
    assert any("1 session(s) not read: 20250601101010123 (rank 0, --session)" in n for n in doc["notes"])


def test_rank_folders_without_kernel_data_are_listed(tmp_path, cli):
    root = tmp_path / "run"
    for rank in range(4):  # a 4-rank run where ranks 1 and 3 were not exported
        torch_npu_session(root, rank=rank, timestamp=f"2025060110101{rank}000", host=f"node{rank}",
                          table=layers(2, LAYER) if rank in (0, 2) else None)
    profile = load_profile(root, CAT)
    assert [r.rank_id for r in profile.ranks] == [0, 2]
    assert sorted((m.rank_id, m.path.rsplit("/", 1)[1]) for m in profile.missing) == [
        (1, "node1_4100_20250601101011000_ascend_pt"), (3, "node3_4100_20250601101013000_ascend_pt")]
    res = cli("copy-audit", str(root), str(root), "--json")
    notes = json.loads(res.stdout)["notes"]
    assert any(n.startswith("warning: eager: 2 run folder(s) hold no kernel_details.csv") for n in notes)


def _recount(paths):
    rows_, total = 0, Decimal(0)
    for path in paths:
        with open(path, newline="", encoding="utf-8") as fh:
            for row in csv.DictReader(fh):
                rows_ += 1
                total += Decimal(row["Task Duration(us)"])
    return rows_, total


def test_msprof_slices_of_one_device_are_one_rank(tmp_path):
    first = layers(3, LAYER)
    second = layers(3, LAYER, t0=first[-1].start_ns + 10_000)
    prof = msprof_export(tmp_path / "eager", [first, second])
    files = sorted((prof / "mindstudio_profiler_output").glob("op_summary_slice_*.csv"))
    assert [f.name for f in files] == ["op_summary_slice_0_20260105101010.csv", "op_summary_slice_1_20260105101010.csv"]
    profile = load_profile(tmp_path / "eager", CAT, rows=True)
    want_rows, want_total = _recount(files)
    assert len(profile.ranks) == 1 and profile.ranks[0].files == 2
    assert profile.ranks[0].label == f"{prof.name}/op_summary_20260105101010.csv"
    assert profile.rows == want_rows and profile.kernel_us == pytest.approx(float(want_total), rel=1e-12)
    assert profile.ranks[0].ordering == "exact start time"


def test_a_folder_named_like_the_kernel_file_is_bad_input(tmp_path, cli):
    run = torch_npu_session(tmp_path / "eager", rank=0, timestamp="20250601101010123", table=None)
    (run / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv").mkdir()
    for target in (tmp_path / "eager", run / "ASCEND_PROFILER_OUTPUT"):
        res = cli("copy-audit", str(target), str(target))
        assert res.exit_code == 2, res.stderr
        assert "kernel_details.csv is a directory, not a CSV file" in res.stderr and "Traceback" not in res.stderr


def test_a_broken_symlink_is_reported(tmp_path, cli):
    run = torch_npu_session(tmp_path / "eager", rank=0, timestamp="20250601101010123", table=None)
    (run / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv").symlink_to(tmp_path / "gone.csv")
    res = cli("integrate", str(tmp_path / "eager"), str(tmp_path / "eager"))
    assert res.exit_code == 2
    assert "kernel_details.csv is a broken symlink (to " in res.stderr and "gone.csv" in res.stderr


def test_single_process_sessions_are_one_rank_too(tmp_path):
    root = tmp_path / "eager"  # profiler_info.json (no torch.distributed): two sessions of the one process
    torch_npu_session(root, rank=None, timestamp="20250601101010123", table=rows([COPY]))
    torch_npu_session(root, rank=None, timestamp="20250601121212123", pid=4200, table=rows([COPY, COPY]))
    with pytest.raises(BadInput, match=r"one process \(profiler_info.json, no rank id\) has 2 profiling sessions"):
        load_profile(root, CAT)
    assert load_profile(root, CAT, session=("latest",)).rows == 2
