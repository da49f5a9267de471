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
    from sdcompile.util.errors import BadInput
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


@pytest.mark.parametrize("kind", ["fifo", "symlink", "folder", "missing folder", "read-only folder"])
@pytest.mark.parametrize("command", ["copy-audit", "integrate"])
def test_html_is_checked_before_the_profiles_are_read_and_never_replaces_a_special_file(cli, tmp_path, kind,
                                                                                         command):
    import os

    html = tmp_path / "report.html"
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    if kind == "fifo":
        os.mkfifo(html)
    elif kind == "symlink":
        html.symlink_to(victim)
    elif kind == "folder":
        html.mkdir()
    elif kind == "missing folder":
        html = tmp_path / "nowhere" / "report.html"
    else:
        (tmp_path / "ro").mkdir(mode=0o555)
        html = tmp_path / "ro" / "report.html"
    # profiles that do not exist: the --html check comes first, so they are never read
    result = cli(command, str(tmp_path / "no-eager"), str(tmp_path / "no-compile"), "--html", str(html), "--force",
                 cwd=tmp_path)
    assert result.exit_code == 2
    [line] = result.stderr.splitlines()
    said = {"fifo": "is a FIFO; only a regular file", "symlink": "is a symbolic link; only a regular file",
            "folder": "is a folder; only a regular file", "missing folder": "does not exist",
            "read-only folder": "is not writable"}[kind]
    assert line.startswith(f"error: --html {html}") and said in line, line
    assert victim.read_text() == "keep me\n"
    assert (kind != "fifo" or html.is_fifo()) and (kind != "symlink" or html.is_symlink())
