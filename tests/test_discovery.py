from pathlib import Path

import pytest

from sdcompile.core.target.discovery import REQUIRED_FILES, find_target
from sdcompile.util.errors import EXIT_BAD_INPUT, NotATarget


def test_real_tree_found_by_repo_and_versioned(mindiesd_tree):
    tree = find_target(mindiesd_tree)
    assert tree.root == mindiesd_tree.resolve()
    assert tree.version == "3.1.0"
    assert tree.found_by == "--repo"
    assert tree.config_file.name == "compiliation_config.py"


@pytest.mark.parametrize("sub", ["mindiesd", "mindiesd/compilation"])
def test_package_or_compilation_folder_is_accepted(mindiesd_tree, sub):
    assert find_target(mindiesd_tree / sub).root == mindiesd_tree.resolve()


def test_env_var_then_upward_search(mindiesd_tree, monkeypatch, tmp_path):
    monkeypatch.setenv("SDCOMPILE_REPO", str(mindiesd_tree))
    assert find_target(None, cwd=tmp_path).found_by == "$SDCOMPILE_REPO"
    monkeypatch.delenv("SDCOMPILE_REPO")
    nested = mindiesd_tree / "mindiesd" / "compilation" / "patterns"
    found = find_target(None, cwd=nested)
    assert found.root == mindiesd_tree.resolve()
    assert found.found_by.startswith("search upward")


def test_wrong_folder_names_every_missing_file(tmp_path):
    with pytest.raises(NotATarget) as info:
        find_target(tmp_path)
    assert info.value.exit_code == EXIT_BAD_INPUT
    for rel in REQUIRED_FILES:
        assert rel in info.value.message


def test_partial_tree_names_only_what_is_missing(mindiesd_tree):
    (mindiesd_tree / "mindiesd/compilation/passes/register_pattern_to_pass.py").unlink()
    with pytest.raises(NotATarget) as info:
        find_target(mindiesd_tree)
    assert "register_pattern_to_pass.py" in info.value.message
    assert "compiliation_config.py" not in info.value.message


def test_no_tree_anywhere_above(tmp_path, monkeypatch):
    monkeypatch.delenv("SDCOMPILE_REPO", raising=False)
    with pytest.raises(NotATarget, match="no MindIE-SD tree") as info:
        find_target(None, cwd=tmp_path)
    assert "sdcompile fetch-target " in info.value.fix  # the command that gets one


def test_cli_reports_wrong_folder_in_one_line_with_exit_2(cli, tmp_path):
    result = cli("status", "--repo", str(tmp_path))
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "missing mindiesd/compilation" in lines[0]
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_nonexistent_repo_path(cli, tmp_path):
    result = cli("status", "--repo", str(Path(tmp_path) / "nope"))
    assert result.exit_code == 2 and "is not a folder" in result.stderr
