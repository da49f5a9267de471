"""`run.json` (what `sdcompile run` may keep) read back: cut short, nothing is kept; another JSON shape or a
folder in its place is exit 2 naming it, since something other than run wrote it."""

import json

import pytest

from sdcompile.lifecycle.state import KeptPhase, RunMemory
from sdcompile.util.errors import BadInput


def test_what_was_remembered_is_read_back(tmp_path):
    RunMemory(tmp_path).remember("analyze", KeptPhase("f1", "2026-01-01T00:00:00+00:00", "t1"))
    assert RunMemory(tmp_path).phases == {"analyze": KeptPhase("f1", "2026-01-01T00:00:00+00:00", "t1")}


@pytest.mark.parametrize("content", ["{not json", json.dumps({"phases": {"analyze": {"fingerprint": "f"}}})],
                         ids=["cut short", "records of another version"])
def test_an_unusable_record_keeps_nothing(tmp_path, content):
    (tmp_path / "run.json").write_text(content)
    assert RunMemory(tmp_path).phases == {}


@pytest.mark.parametrize("content", ["[]", "null", '{"phases": []}', '{"phases": {"analyze": 1}}', "folder"])
def test_another_shape_or_a_folder_is_bad_input_naming_it(tmp_path, content):
    path = tmp_path / "run.json"
    if content == "folder":
        path.mkdir()
    else:
        path.write_text(content)
    with pytest.raises(BadInput, match=r"run\.json is not a") as info:
        RunMemory(tmp_path)
    assert str(path) in info.value.message and info.value.fix.startswith("delete it")
