"""Names and paths from the command line are checked before any work: one line, exit 2, never 70."""

import pytest

LONG = "a" * 300


@pytest.mark.parametrize("args", [
    ("register", "--model", "flux", "--op", LONG),
    ("register", "--model", "flux", "--op", "rmsnorm", "--module", f"{LONG}_pattern"),
    ("scaffold", "--model", "flux", "--op", "rmsnorm", "--name", LONG),
])
def test_a_name_longer_than_a_file_name_stops_before_the_tree_is_looked_for(cli, tmp_path, args):
    result = cli(*args, "--repo", str(tmp_path / "no-tree"), "--workdir", str(tmp_path / "ws"), cwd=tmp_path)
    assert result.exit_code == 2
    [line] = result.stderr.splitlines()
    assert "longer than a file name may be here (255) — use a shorter name" in line
    assert not (tmp_path / "ws").exists()


def test_a_long_op_label_cannot_name_a_workspace_folder(tmp_path):
    from sdcompile.errors import BadInput
    from sdcompile.workspace.store import Workspace

    with pytest.raises(BadInput, match="the workspace folder name 'a+'… is 300 bytes"):
        Workspace(tmp_path).pair_dir("flux", LONG)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("path", "said"), [
    (f"{LONG}/m.py:build", "is 300 bytes"),
    ("dir/inj\nprint(1)\n#/m.py:build", "contains the control character '\\n'"),
    ("it's/m.py:build", "contains \"'\""),
    ("back\\slash/m.py:build", "contains '\\\\'"),
])
def test_a_model_file_path_is_checked_before_any_work(cli, tmp_path, path, said):
    result = cli("analyze", "--model-file", path, "--op", "rmsnorm", "--workdir", str(tmp_path / "ws"), cwd=tmp_path)
    assert result.exit_code == 2
    [line] = result.stderr.splitlines()
    assert line.startswith("error: --model-file") and said in line, line
