"""Bad profiles give exit 2 and one line naming the problem — never a traceback."""

from __future__ import annotations

import shutil

import pytest
from profile_recount import DATA

from sdcompile.core.profiles.catalog import load_catalog
from sdcompile.core.profiles.profile import load_profile
from sdcompile.util.errors import BadInput

GOOD = (DATA / "level0_short" / "eager" / "kernel_details.csv").read_bytes()
CAT = load_catalog()


def _write(tmp_path, name: str, data: bytes):
    path = tmp_path / name / "kernel_details.csv"
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    return path


CASES = {
    "no_duration": (b"Name,Type,Accelerator Core,Start Time(us),Wait Time(us)\r\nx,Mul,AI_CORE,1.0\t,0\r\n",
                    ["Duration(us)", "columns found: 'Name', 'Type', 'Accelerator Core'"]),
    "no_name": (b"Kernel,Type,Duration(us)\nx,Mul,1.5\n",
                ["'Name'", "columns found: 'Kernel', 'Type', 'Duration(us)'"]),
    "empty": (b"", ["is empty"]),
    "header_only": (GOOD.split(b"\r\n")[0] + b"\r\n", ["no kernel rows"]),
    "truncated": (GOOD[: len(GOOD) // 2 - 7], ["truncated"]),
    "not_utf8": (GOOD.replace(b"aclnnNeg_NegAiCore_Neg", b"aclnnNeg_\xff\xfeAiCore_Neg", 1), ["not UTF-8"]),
    "bad_duration": (b"Name,Type,Duration(us)\nx,Mul,fast\n", ["Duration(us)", "cannot be read"]),
}


@pytest.mark.parametrize("case", CASES)
def test_bad_files_raise_bad_input(tmp_path, case):
    data, needles = CASES[case]
    path = _write(tmp_path, case, data)
    with pytest.raises(BadInput) as info:
        load_profile(path, CAT)
    text = info.value.one_line()
    for needle in needles:
        assert needle in text, text


def test_ranks_with_different_headers(tmp_path):
    a = DATA / "multi_rank" / "eager"
    shutil.copytree(a, tmp_path / "run")
    other = next((DATA / "level0_shapes" / "eager").rglob("kernel_details.csv"))
    target = sorted((tmp_path / "run").rglob("kernel_details.csv"))[1]
    target.write_bytes(other.read_bytes())
    with pytest.raises(BadInput) as info:
        load_profile(tmp_path / "run", CAT)
    assert "ranks have different headers" in info.value.message and "worker1" in info.value.message


def test_step_needs_a_step_column():
    with pytest.raises(BadInput, match="no Step Id column"):
        load_profile(DATA / "level0_short" / "eager", CAT, step=1)
    with pytest.raises(BadInput, match=r"steps present: 1-2 \(2 steps\)"):
        load_profile(DATA / "full_step" / "eager", CAT, step=7)


def test_cli_exit_codes_and_one_line(tmp_path, cli):
    path = _write(tmp_path, "nodur", CASES["no_duration"][0])
    res = cli("copy-audit", str(path), str(path))
    assert res.exit_code == 2
    assert "Traceback" not in res.stderr and res.stderr.count("\n") == 1
    assert "columns found" in res.stderr
    res = cli("integrate", str(tmp_path / "missing"), str(path))
    assert res.exit_code == 2 and "does not exist" in res.stderr
    res = cli("integrate", str(DATA / "full_step" / "eager"), str(DATA / "full_step" / "compile"), "--op", "softmax")
    assert res.exit_code == 2 and "unknown op 'softmax'" in res.stderr
    res = cli("copy-audit", str(DATA / "full_step" / "eager"), str(DATA / "full_step" / "compile"), "--attn", "4d")
    assert res.exit_code == 2 and "--attn" in res.stderr
