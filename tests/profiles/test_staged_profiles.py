"""Profile run folders are built under a staging name, marked complete and renamed into place
(sdcompile/core/profiles/capture.py): readers never take a staging folder for a rank, an exception leaves nothing,
and only staging folders whose process is gone are removed."""

from __future__ import annotations

import subprocess
import sys

import pytest

from sdcompile.core.profiles.capture import remove_stale_staging, staged_run_folder
from sdcompile.core.profiles.locate import (
    CAPTURE_INFO,
    COMPLETE_MARKER,
    KERNEL_FILE,
    OUTPUT_DIR,
    STAGING_PREFIX,
    locate,
    run_folders,
    written_by_sdcompile,
)

ROWS = "Name,Type,Duration(us)\r\naten::mm,MatMul,1.0\r\n"


def _run_folder(parent, name):
    output = parent / name / OUTPUT_DIR
    output.mkdir(parents=True)
    (output / KERNEL_FILE).write_text(ROWS)
    return parent / name


def test_a_staging_folder_is_not_read_as_a_rank(tmp_path):
    real = _run_folder(tmp_path, "flux-eager-cpu_11_20260101000000000_ascend_pt")
    _run_folder(tmp_path, f"{STAGING_PREFIX}12-flux-eager-cpu_12_20260101000000001_ascend_pt")
    located = locate(tmp_path)
    assert [r.label for r in located.ranks] == [real.name] and located.missing == ()


def test_a_staged_folder_appears_complete_or_not_at_all(tmp_path):
    with staged_run_folder(tmp_path, "a_1_20260101000000000_ascend_pt") as staging:
        assert staging.parent == tmp_path and staging.name.startswith(STAGING_PREFIX)
        (staging / "data").write_text("x")
        assert not (tmp_path / "a_1_20260101000000000_ascend_pt").exists()
    done = tmp_path / "a_1_20260101000000000_ascend_pt"
    assert (done / "data").is_file() and (done / COMPLETE_MARKER).is_file() and written_by_sdcompile(done)
    with pytest.raises(KeyboardInterrupt), staged_run_folder(tmp_path, "b_1_20260101000000000_ascend_pt") as staging:
        (staging / "data").write_text("x")
        raise KeyboardInterrupt
    assert sorted(p.name for p in tmp_path.iterdir()) == [done.name]


def test_an_older_sdcompile_profile_counts_as_its_own_by_its_capture_note(tmp_path):
    old = _run_folder(tmp_path, "a_1_20260101000000000_ascend_pt")
    assert not written_by_sdcompile(old)
    (old / CAPTURE_INFO).write_text("{}")
    assert written_by_sdcompile(old)


def test_only_staging_folders_of_gone_processes_are_removed(tmp_path):
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    dead = subprocess.Popen([sys.executable, "-c", ""])
    dead.wait()
    try:
        writing = tmp_path / f"{STAGING_PREFIX}{live.pid}-x_ascend_pt"
        left = tmp_path / f"{STAGING_PREFIX}{dead.pid}-x_ascend_pt"
        writing.mkdir()
        left.mkdir()
        assert remove_stale_staging(tmp_path) == [left]
        assert writing.is_dir() and not left.exists()
        assert run_folders(tmp_path) == []  # the one still being written is not a profile (yet)
    finally:
        live.kill()
        live.wait()
    assert remove_stale_staging(tmp_path / "absent") == []
