"""The one diff sdcompile shows and writes: what `patch -p1` (and `git apply`) apply as they are, including a file
whose last line has no newline, before and after."""

import shutil
import subprocess

import pytest

from sdcompile.util.text_diff import NO_NEWLINE, unified_diff

BACKEND = "mindiesd/compilation/mindie_sd_backend.py"
OLD = "def backend(gm):\n    gm = rewrite(gm)\n    return gm"  # no final newline, as some editors leave a file
NEW = "def backend(gm):\n    gm = rewrite(gm)\n    gm = MyPass()(gm)\n    return gm"


@pytest.mark.parametrize("tool", [["patch", "-p1", "--quiet"], ["git", "apply"]])
@pytest.mark.parametrize(("old", "new"), [(OLD, NEW), (OLD + "\n", NEW), (OLD, NEW + "\n"), (OLD + "\n", NEW + "\n")])
def test_the_diff_applies_whether_or_not_the_last_line_ends_in_a_newline(tmp_path, tool, old, new):
    if shutil.which(tool[0]) is None:
        pytest.skip(f"{tool[0]} is not on this machine")
    (tmp_path / BACKEND).parent.mkdir(parents=True)
    (tmp_path / BACKEND).write_text(old)
    diff = unified_diff(old.encode(), new.encode(), BACKEND)
    assert diff.startswith(f"--- a/{BACKEND}\n+++ b/{BACKEND}\n")
    assert (NO_NEWLINE in diff) == (not old.endswith("\n") or not new.endswith("\n"))
    subprocess.run(tool, input=diff, text=True, cwd=tmp_path, check=True)
    assert (tmp_path / BACKEND).read_text() == new


def test_a_new_file_is_from_dev_null_and_equal_texts_give_no_diff():
    assert unified_diff(None, "x = 1\n", "patterns/mine.py").startswith("--- /dev/null\n+++ b/patterns/mine.py\n")
    assert unified_diff("x = 1\n", b"x = 1\n", "patterns/mine.py") == ""
