"""Odd input around register: registration files with a UTF-8 BOM or a coding cookie are read and written back as
Python reads them, one Python could not read either is exit 2 naming the file (register, --undo, status, --check);
a workspace state file register could not update stops it before it edits the tree."""

import pytest
from register_helpers import CONFIG, PATTERNS_INIT

from sdcompile.phases.register.phase import check_registration, register
from sdcompile.phases.status.phase import collect_status
from sdcompile.util.errors import BadInput

BOM = b"\xef\xbb\xbf"
LATIN1 = b"# -*- coding: latin-1 -*-\n# caf\xe9\n"


@pytest.mark.parametrize("rel", [PATTERNS_INIT, CONFIG], ids=["patterns-init", "config"])
@pytest.mark.parametrize("prefix", [BOM, LATIN1], ids=["bom", "latin-1 cookie"])
def test_register_and_undo_keep_the_encoding(target, tmp_path, rel, prefix):
    path = target / rel
    path.write_bytes(prefix + path.read_bytes())
    original = path.read_bytes()
    result = register(target, "flux", "rmsnorm", workdir=tmp_path / "ws")
    assert result.outcome == "registered"
    edited = path.read_bytes()
    assert edited.startswith(prefix) and edited != original
    assert check_registration(target).passed
    assert collect_status(target, tmp_path / "ws", require_target=True).target.groups[-1].flag == "enable_flux_rmsnorm"
    register(target, "flux", "rmsnorm", workdir=tmp_path / "ws", undo=True)
    assert path.read_bytes() == original


def test_a_file_python_cannot_decode_is_bad_input_naming_it(target, tmp_path, cli):
    path = target / CONFIG
    path.write_bytes(b"# caf\xe9\n" + path.read_bytes())  # latin-1 bytes, no cookie: Python refuses it too
    for call in (lambda: register(target, "flux", "rmsnorm", workdir=tmp_path / "ws"),
                 lambda: register(target, "flux", "rmsnorm", workdir=tmp_path / "ws", undo=True),
                 lambda: check_registration(target),
                 lambda: collect_status(target, tmp_path / "ws", require_target=True)):
        with pytest.raises(BadInput, match="compiliation_config.py") as info:
            call()
        assert "coding cookie" in info.value.fix
    result = cli("register", "--check", "--repo", str(target))
    assert result.exit_code == 2 and len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith(f"error: {path}: ")


def test_a_state_file_register_cannot_update_stops_it_before_the_edit(target, tmp_path, cli):
    from register_helpers import snapshot

    original = snapshot(target)
    state = tmp_path / "ws/flux/rmsnorm/state.json"
    state.parent.mkdir(parents=True)
    state.write_text("[]")
    result = cli("register", "--repo", str(target), "--model", "flux", "--op", "rmsnorm", "--workdir",
                 str(tmp_path / "ws"))
    assert result.exit_code == 2 and result.stderr.startswith(f"error: {state} is not a valid sdcompile state file")
    assert snapshot(target) == original


def test_a_symlinked_registration_file_is_edited_through_the_link(target, tmp_path):
    config = target / CONFIG
    real = tmp_path / "elsewhere" / "compiliation_config.py"
    real.parent.mkdir()
    real.write_bytes(config.read_bytes())
    config.unlink()
    config.symlink_to(real)
    original = real.read_bytes()
    register(target, "flux", "rmsnorm", workdir=tmp_path / "ws")
    assert config.is_symlink() and config.resolve() == real
    assert b"enable_flux_rmsnorm: bool = True" in real.read_bytes()
    register(target, "flux", "rmsnorm", workdir=tmp_path / "ws", undo=True)
    assert config.is_symlink() and real.read_bytes() == original
