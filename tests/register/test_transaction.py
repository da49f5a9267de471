"""fs_transaction.commit_all: several files written all or none."""

import os

import pytest

import sdcompile.util.fs_transaction as tx
from sdcompile.util.errors import BadInput


@pytest.fixture
def files(tmp_path):
    paths = []
    for i, name in enumerate(("a.py", "sub/b.py", "c.py")):
        p = tmp_path / name
        p.parent.mkdir(exist_ok=True)
        p.write_bytes(f"old {i}\n".encode())
        os.chmod(p, 0o640)
        paths.append(p)
    return paths


def _plan(paths):
    return [tx.PlannedWrite(p, p.read_bytes(), p.read_bytes().replace(b"old", b"new")) for p in paths]


def _leftovers(tmp_path):
    return [p for p in tmp_path.rglob(".*") if p.name.endswith((".tmp", ".restore"))]


def test_all_files_written_with_their_permissions(files, tmp_path):
    tx.commit_all(_plan(files))
    assert [p.read_bytes() for p in files] == [b"new 0\n", b"new 1\n", b"new 2\n"]
    assert all(p.stat().st_mode & 0o777 == 0o640 for p in files)
    assert _leftovers(tmp_path) == []


def test_unchanged_files_are_not_touched(files):
    before = files[1].stat().st_mtime_ns
    plan = _plan(files)
    plan[1] = tx.PlannedWrite(files[1], plan[1].original, plan[1].original)
    tx.commit_all(plan)
    assert files[1].stat().st_mtime_ns == before and files[0].read_bytes() == b"new 0\n"


def test_a_read_only_file_stops_every_write(files, tmp_path):
    os.chmod(files[2], 0o444)  # refused even for root, who could rename over it
    with pytest.raises(BadInput, match=r"c\.py is read-only; every file is unchanged") as info:
        tx.commit_all(_plan(files))
    assert "chmod" in info.value.fix
    assert [p.read_bytes() for p in files] == [b"old 0\n", b"old 1\n", b"old 2\n"]
    assert _leftovers(tmp_path) == []


def test_a_file_changed_since_the_edit_was_computed_stops_every_write(files):
    plan = _plan(files)
    files[1].write_bytes(b"edited meanwhile\n")
    with pytest.raises(BadInput, match="changed while the edit was prepared"):
        tx.commit_all(plan)
    assert files[0].read_bytes() == b"old 0\n" and files[2].read_bytes() == b"old 2\n"


def test_a_failure_during_the_renames_restores_the_files_already_replaced(files, tmp_path, monkeypatch):
    # A rename failing half-way (disk error, file made immutable meanwhile) cannot be provoked portably; fail
    # the second rename of the commit and check that the first file is put back.
    real_replace = os.replace
    calls = []

    def failing_replace(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise OSError(5, "Input/output error")
        return real_replace(src, dst)

    monkeypatch.setattr(tx.os, "replace", failing_replace)
    with pytest.raises(BadInput, match=r"could not write .*b\.py \(Input/output error\); every file is unchanged"):
        tx.commit_all(_plan(files))
    monkeypatch.undo()
    assert [p.read_bytes() for p in files] == [b"old 0\n", b"old 1\n", b"old 2\n"]
    assert _leftovers(tmp_path) == []
