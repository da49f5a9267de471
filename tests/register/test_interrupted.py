"""register, --undo and scaffold's writes interrupted at each step of their commit: the tree is as it was or fully
edited, no staged file is left, and the next register / status / --check finishes what a killed process left."""

import json
import os
import signal
import subprocess
import sys

import pytest
from register_helpers import REGISTRATION_FILES, snapshot

import sdcompile.util.fs_transaction as tx
from sdcompile.core.target.discovery import find_target
from sdcompile.core.target.registry_audit import audit_registration
from sdcompile.phases.register.phase import check_registration, register
from sdcompile.phases.status.phase import collect_status

JOURNAL = ".sdcompile-tree/journal.json"


def staged_leftovers(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob(".*") if p.name.endswith((".tmp", ".restore")))


def interrupt_at(monkeypatch, step, action):
    def hook(name):
        if name == step:
            action()
    monkeypatch.setattr(tx, "step_hook", hook)


def flux(target, tmp_path, **kwargs):
    return register(target, "flux", "rmsnorm", workdir=tmp_path / "ws", **kwargs)


def raise_interrupt():
    raise KeyboardInterrupt


@pytest.mark.parametrize("step", ["prepared", "staged __init__.py", "committing", "replaced __init__.py"])
def test_ctrl_c_before_or_during_the_renames_leaves_the_tree_byte_identical(target, tmp_path, monkeypatch, step):
    original = snapshot(target)
    interrupt_at(monkeypatch, step, raise_interrupt)
    with pytest.raises(KeyboardInterrupt):
        flux(target, tmp_path)
    assert snapshot(target) == original
    assert staged_leftovers(target) == [] and not (target / JOURNAL).exists()


def test_ctrl_c_during_undo_leaves_the_registration_whole(target, tmp_path, monkeypatch):
    flux(target, tmp_path)
    registered = snapshot(target)
    interrupt_at(monkeypatch, "replaced __init__.py", raise_interrupt)
    with pytest.raises(KeyboardInterrupt):
        flux(target, tmp_path, undo=True)
    assert snapshot(target) == registered and staged_leftovers(target) == []
    assert audit_registration(find_target(target)).passed


def test_a_real_sigint_during_the_renames_waits_for_the_commit(target, tmp_path, monkeypatch):
    # The signal is delivered to this process between two renames; the handler defers it, so every file is
    # written before KeyboardInterrupt surfaces.
    interrupt_at(monkeypatch, "replaced __init__.py", lambda: os.kill(os.getpid(), signal.SIGINT))
    with pytest.raises(KeyboardInterrupt):
        flux(target, tmp_path)
    monkeypatch.setattr(tx, "step_hook", None)
    assert staged_leftovers(target) == [] and not (target / JOURNAL).exists()
    audit = audit_registration(find_target(target))
    assert audit.passed and audit.entries == 17
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler is put back


KILLED_AT = """
import os, signal, sys
import sdcompile.util.fs_transaction as tx
from sdcompile.cli.app import main

step, sig = sys.argv[1], int(sys.argv[2])
tx.step_hook = lambda name: os.kill(os.getpid(), sig) if name == step else None
sys.argv = ["sdcompile", *sys.argv[3:]]
main()
"""


def run_killed(step, sig, *args):
    return subprocess.run([sys.executable, "-c", KILLED_AT, step, str(int(sig)), *args], capture_output=True, text=True,
                          timeout=120)


def register_args(target, tmp_path, *extra):
    return ("register", "--repo", str(target), "--model", "flux", "--op", "rmsnorm", "--workdir",
            str(tmp_path / "ws"), *extra)


def test_sigterm_during_the_renames_ends_the_process_after_the_commit(target, tmp_path):
    proc = run_killed("replaced __init__.py", signal.SIGTERM, *register_args(target, tmp_path))
    assert proc.returncode == -signal.SIGTERM
    assert staged_leftovers(target) == [] and not (target / JOURNAL).exists()
    assert audit_registration(find_target(target)).entries == 17


def test_sigkill_during_the_renames_is_completed_by_the_next_check(target, tmp_path, cli):
    proc = run_killed("replaced __init__.py", signal.SIGKILL, *register_args(target, tmp_path))
    assert proc.returncode == -signal.SIGKILL
    assert (target / JOURNAL).is_file() and len(staged_leftovers(target)) == 2  # 1 of the 3 files renamed
    journal = json.loads((target / JOURNAL).read_text())
    assert journal["state"] == "committing" and journal["command"].startswith("sdcompile register --repo")

    check = cli("register", "--check", "--repo", str(target))
    assert check.exit_code == 0, check.stdout
    assert "recovered: an interrupted `sdcompile register --repo" in check.stdout and "was completed" in check.stdout
    assert staged_leftovers(target) == [] and not (target / JOURNAL).exists()
    assert audit_registration(find_target(target)).entries == 17
    assert flux(target, tmp_path).outcome == "already registered"


def test_sigkill_while_staging_is_rolled_back_by_status(target, tmp_path):
    original = snapshot(target)
    proc = run_killed("staged __init__.py", signal.SIGKILL, *register_args(target, tmp_path))
    assert proc.returncode == -signal.SIGKILL and staged_leftovers(target)
    report = collect_status(target, tmp_path / "ws", require_target=True)
    assert report.recovered and "was rolled back" in report.recovered
    assert snapshot(target) == original and staged_leftovers(target) == []


def test_sigkill_during_undo_is_completed_by_the_next_register(target, tmp_path):
    flux(target, tmp_path)
    proc = run_killed("replaced __init__.py", signal.SIGKILL, *register_args(target, tmp_path, "--undo"))
    assert proc.returncode == -signal.SIGKILL
    again = flux(target, tmp_path)  # the undo is finished first, then the group registered again
    assert any("register --repo" in n and "--undo` was completed" in n for n in again.notes)
    assert again.outcome == "registered" and staged_leftovers(target) == []
    assert audit_registration(find_target(target)).passed


def test_staged_copies_without_a_journal_are_removed(target, tmp_path):
    # What an older sdcompile, killed between its renames, left: staged copies and no journal.
    original = snapshot(target)
    for rel in REGISTRATION_FILES:
        (target / rel).with_name(f".{rel.name}.abc123.tmp").write_text("half an edit\n")
    audit = check_registration(target)
    assert audit.recovered and audit.recovered.startswith("stale staged files of an interrupted command were removed")
    assert staged_leftovers(target) == [] and snapshot(target) == original


def test_scaffold_files_interrupted_between_writes_are_all_put_back(tmp_path, monkeypatch):
    from sdcompile.core.target.discovery import TargetTree
    from sdcompile.phases.scaffold.files import PlannedFile, write_all

    tree = TargetTree(tmp_path, "3.1.0", "test")
    edited = tmp_path / "patterns/flux_rmsnorm_pattern.py"
    edited.parent.mkdir()
    edited.write_text("# the user's edited pattern\n")
    planned = [PlannedFile(edited, "patterns/flux_rmsnorm_pattern.py", "pattern", "generated\n"),
               PlannedFile(tmp_path / "tests/test_flux.py", "tests/test_flux.py", "pattern test", "test\n")]
    interrupt_at(monkeypatch, "replaced flux_rmsnorm_pattern.py", raise_interrupt)
    with pytest.raises(KeyboardInterrupt):
        write_all(planned, tree)
    assert edited.read_text() == "# the user's edited pattern\n" and not (tmp_path / "tests/test_flux.py").exists()
    assert staged_leftovers(tmp_path) == [] and not (tmp_path / JOURNAL).exists()
