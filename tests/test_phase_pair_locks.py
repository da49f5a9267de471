"""Every command that writes a workspace pair holds that pair's lock from before any work: while another process
holds it, the command waits, then exits 2 naming the holder, with nothing written; the pair is named as every
command records it, however the model and op were spelled."""

import os
from pathlib import Path

import pytest

from sdcompile.core.ops import OPS
from sdcompile.phases.pair_scope import holding_pairs, record_key
from sdcompile.workspace.locks import PAIR_HOLDER, PAIR_LOCK, pair_lock

PROFILES = Path(__file__).parent / "profiles" / "data" / "full_step"

# Each command as a user types it, spelled the other ways the pair's model and op can be (class name, op alias):
# they all write flux/rmsnorm.
WRITERS = {
    "analyze": ["analyze", "--model", "FluxTransformer2DModel", "--op", "RMSNorm"],
    "analyze --op all": ["analyze", "--model", "flux", "--op", "all"],
    "scaffold": ["scaffold", "--model", "flux", "--op", "rmsnorm"],
    "register": ["register", "--model", "flux", "--op", "rmsnorm"],
    "verify": ["verify", "--model", "flux", "--op", "rmsnorm"],
    "debug": ["debug", "--model", "flux", "--op", "rmsnorm"],
    "integrate": ["integrate", "--model", "flux", "--op", "rms_norm"],
    "copy-audit": ["copy-audit", str(PROFILES / "eager"), str(PROFILES / "compile"), "--model", "flux", "--op",
                   "RmsNorm"],
}


@pytest.mark.parametrize("command", list(WRITERS))
def test_a_command_on_a_pair_another_process_holds_exits_2_naming_it(command, cli, tmp_path):
    workdir = tmp_path / "ws"
    pair = workdir / "flux" / "rmsnorm"
    with pair_lock(pair):
        out = cli(*WRITERS[command], "--workdir", str(workdir), cwd=tmp_path, env={"SDCOMPILE_LOCK_TIMEOUT": "0.3"})
    assert out.exit_code == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert f"{pair.resolve()} is in use by pid {os.getpid()} (`sdcompile" in lines[0]
    assert "nothing was changed" in lines[0]
    assert {p.name for p in pair.iterdir()} == {PAIR_LOCK}  # the holder record went with its block; nothing written
    assert sorted(p.name for p in workdir.iterdir()) == ["flux"]  # no other pair of the model was started either


def test_a_dry_run_register_records_nothing_and_so_waits_for_no_pair(cli, tmp_path, mindiesd_tree):
    workdir = tmp_path / "ws"
    with pair_lock(workdir / "flux" / "rmsnorm"):
        out = cli("register", "--model", "flux", "--op", "rmsnorm", "--repo", str(mindiesd_tree), "--allow-missing",
                  "--dry-run", "--workdir", str(workdir), cwd=tmp_path, env={"SDCOMPILE_LOCK_TIMEOUT": "0.3"})
    assert out.exit_code == 0, out.stderr
    assert "in use by" not in out.stderr


def test_every_primitive_holds_only_the_pairs_that_exist(tmp_path):
    # analyze --op all may write any primitive's pair, but creates only those the model has
    (tmp_path / "flux" / "rope").mkdir(parents=True)
    with holding_pairs(tmp_path, "flux", OPS, existing_only=True):
        assert (tmp_path / "flux" / "rope" / PAIR_HOLDER).is_file()
        assert sorted(p.name for p in (tmp_path / "flux").iterdir()) == ["rope"]
    with holding_pairs(tmp_path, "flux", ("gelu",)):  # one named: held, and created for what it will write
        assert (tmp_path / "flux" / "gelu" / PAIR_HOLDER).is_file()


def test_profile_phases_record_under_the_pair_every_command_uses():
    assert record_key("FluxTransformer2DModel", None, "RMSNorm") == ("flux", "rmsnorm")
    assert record_key("wan", None, "RotaryMul") == ("wan", "rope")


def test_copy_audit_records_a_class_name_and_an_alias_under_the_zoo_pair(cli, tmp_path):
    workdir = tmp_path / "ws"
    out = cli("copy-audit", str(PROFILES / "eager"), str(PROFILES / "compile"), "--model", "FluxTransformer2DModel",
              "--op", "RMSNorm", "--workdir", str(workdir), cwd=tmp_path)
    assert out.exit_code == 0, out.stderr
    assert sorted(str(p.relative_to(workdir)) for p in workdir.glob("*/*/state.json")) == ["flux/rmsnorm/state.json"]
    status = cli("status", "--workdir", str(workdir), "--json", cwd=tmp_path)
    assert status.exit_code == 0, status.stderr
    assert '"model": "flux"' in status.stdout and '"op": "rmsnorm"' in status.stdout


def test_a_name_too_long_for_the_workspace_is_refused_before_any_work(cli, tmp_path):
    # register's --model names the pair's folder and the generated names; refused before the tree is looked for
    out = cli("register", "--model", "m" * 300, "--op", "rmsnorm", "--repo", str(tmp_path / "no-tree"),
              "--workdir", str(tmp_path / "ws"), cwd=tmp_path)
    assert out.exit_code == 2, out.stderr
    assert "mmmmmmmm" in out.stderr and "longer than a file name may be here" in out.stderr
    assert not (tmp_path / "ws").exists()
