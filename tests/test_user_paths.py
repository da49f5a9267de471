"""A path the user gave that sdcompile cannot write or read is exit 2 with one line naming the path and a fix, found
before the long work starts; never an OSError (exit 70) after it. Every case here fails for root as well: sdcompile
runs as root in containers, where permission checks by trying would pass."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

DATA = Path(__file__).resolve().parent / "profiles" / "data" / "level0_shapes"
EAGER, COMPILE = DATA / "eager", DATA / "compile"


def _invoke(*args: str, env: dict[str, str] | None = None):
    from sdcompile.cli.app import app

    return CliRunner().invoke(app, list(args), env=env)


# Each command with the option naming the folder it writes.
COMMANDS = {
    "analyze": lambda p: ("analyze", "--model", "flux", "--op", "rmsnorm", "--workdir", p),
    "run": lambda p: ("run", "--model", "flux", "--workdir", p),
    "profile": lambda p: ("profile", "--model", "flux", "--mode", "eager", "--out", p, "--force"),
    "copy-audit": lambda p: ("copy-audit", str(EAGER), str(COMPILE), "--model", "flux", "--op", "rmsnorm",
                             "--workdir", p),
    "fetch-target": lambda p: ("fetch-target", p),
    # the other commands that record in the workspace; the tree they would need does not exist, so the check on the
    # workspace is seen to come first
    "scaffold": lambda p: ("scaffold", "--model", "flux", "--op", "rmsnorm", "--repo", "/no-tree", "--workdir", p),
    "register": lambda p: ("register", "--model", "flux", "--op", "rmsnorm", "--repo", "/no-tree", "--workdir", p),
    "verify": lambda p: ("verify", "--repo", "/no-tree", "--workdir", p),
    "debug": lambda p: ("debug", "--model", "flux", "--op", "rmsnorm", "--repo", "/no-tree", "--workdir", p),
    "integrate": lambda p: ("integrate", str(EAGER), str(COMPILE), "--model", "flux", "--op", "rmsnorm",
                            "--workdir", p),
}
OPTION = {command: "--workdir" for command in COMMANDS} | {"profile": "--out", "fetch-target": "DEST"}


def _unwritable(kind: str, tmp: Path) -> tuple[str, str]:
    """(the path, what the line says about it) for one way a folder cannot be written."""
    if kind == "a file":
        (tmp / "file").write_text("keep me\n")
        return str(tmp / "file"), "is a file, not a folder"
    if kind == "under a file":
        (tmp / "file").write_text("keep me\n")
        return str(tmp / "file" / "ws"), f"{tmp / 'file'} is a file, not a folder, so the folder cannot be created"
    if kind == "a FIFO":
        os.mkfifo(tmp / "fifo")
        return str(tmp / "fifo"), "is a FIFO, not a folder"
    if kind == "a device":
        return "/dev/null", "is a device, not a folder"
    if kind == "a broken symlink":
        (tmp / "link").symlink_to(tmp / "gone")
        return str(tmp / "link"), "is a broken symbolic link"
    if kind == "read-only":
        (tmp / "ro").mkdir(mode=0o555)
        return str(tmp / "ro"), "is not writable (mode 0555"
    if kind == "under read-only":
        (tmp / "ro").mkdir(mode=0o555)
        return str(tmp / "ro" / "ws"), f"the folder {tmp / 'ro'} is not writable (mode 0555"
    if kind == "/proc":
        return "/proc/sdcompile-ws", "the folder /proc is not writable"
    if kind == "a long name":
        return str(tmp / ("a" * 300)), "is 300 bytes, longer than a file name may be here"
    assert kind == "a long path"
    return str(tmp / "/".join(["d" * 200] * 25)), "longer than a path may be here (4096)"


KINDS = ["a file", "under a file", "a FIFO", "a device", "a broken symlink", "read-only", "under read-only", "/proc",
         "a long name", "a long path"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("command", list(COMMANDS))
def test_an_output_folder_that_cannot_be_written_is_exit_2_before_any_work(tmp_path, command, kind):
    path, said = _unwritable(kind, tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    result = _invoke(*COMMANDS[command](path))
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    [line] = result.stderr.splitlines()  # one line: no progress message, so nothing ran before the check
    shown = path[:60] + "…" if kind == "a long path" else path  # a path of 5000 bytes is shown cut short
    assert line.startswith(f"error: {OPTION[command]} {shown}"), line
    assert said in line, line
    assert " — " in line  # and a fix
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    if kind in ("a file", "under a file"):
        assert (tmp_path / "file").read_text() == "keep me\n"


def test_a_read_only_folder_is_refused_by_its_permission_bits_and_the_line_says_so_for_root(tmp_path):
    path, _ = _unwritable("read-only", tmp_path)
    line = _invoke(*COMMANDS["analyze"](path)).stderr.strip()
    assert ("sdcompile runs as root, which could write it anyway" in line) == (os.geteuid() == 0), line
    assert f"chmod u+w {path}" in line


def test_the_workspace_from_the_environment_is_checked_too(tmp_path):
    (tmp_path / "file").write_text("")
    result = _invoke("analyze", "--model", "flux", env={"SDCOMPILE_WORKDIR": str(tmp_path / "file")})
    assert result.exit_code == 2
    assert f"--workdir {tmp_path / 'file'} is a file, not a folder" in result.stderr


def test_a_missing_parent_of_an_output_folder_is_created_later_so_it_passes_the_check(tmp_path):
    from sdcompile.util.input_checks import writable_dir

    assert writable_dir(tmp_path / "new" / "deeper", "--workdir") == tmp_path / "new" / "deeper"
    assert not (tmp_path / "new").exists()  # the check writes nothing


def test_a_control_character_in_a_path_keeps_the_message_on_one_line(tmp_path):
    (tmp_path / "a\nb").write_text("")
    result = _invoke(*COMMANDS["profile"](str(tmp_path / "a\nb")))
    assert result.exit_code == 2
    [line] = result.stderr.splitlines()
    assert repr(str(tmp_path / "a\nb")) in line


def test_profile_refuses_an_out_folder_before_the_model_is_built_in_a_real_process(cli, tmp_path):
    (tmp_path / "out").write_text("keep me\n")
    result = cli("profile", "--model", "flux", "--mode", "eager", "--out", str(tmp_path / "out"), "--force",
                 cwd=tmp_path)
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [f"error: --out {tmp_path / 'out'} is a file, not a folder — choose a "
                                          "folder for --out, or a path where one can be created"]
    assert (tmp_path / "out").read_text() == "keep me\n"


# --- paths copy-audit reads ------------------------------------------------------------------------------------------
def _read_args(where: str, path: str) -> list[str]:
    sides = {"EAGER": [path, str(COMPILE)], "COMPILE": [str(EAGER), path]}
    return ["copy-audit", *sides.get(where, [str(EAGER), str(COMPILE)]),
            *([where, path] if where.startswith("--") else [])]


@pytest.mark.parametrize("where", ["EAGER", "COMPILE", "--log", "--catalog"])
@pytest.mark.parametrize(("path", "said"), [
    (str(DATA / ("a" * 300)), "cannot be read: File name too long"),
    ("/proc/self/mem", "cannot be read: Input/output error"),
])
def test_a_profile_log_or_catalog_that_cannot_be_read_is_exit_2_naming_it(where, path, said):
    if where == "--catalog" and path == "/proc/self/mem":
        said = "cannot be read"  # read as text: the error may come from the read or from the decoding
    result = _invoke(*_read_args(where, path))
    assert result.exit_code == 2, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: {where} {path}") and said in line, line


@pytest.mark.parametrize("args", [
    ("status", "--workdir", "{long}"),
    ("copy-audit", str(EAGER), str(COMPILE), "--html", "{long}/report.html", "--force"),
])
def test_a_name_too_long_inside_a_path_a_command_only_reads_or_writes_a_file_in_is_exit_2(tmp_path, args):
    long = str(tmp_path / ("a" * 300))
    result = _invoke(*(a.format(long=long) for a in args))
    assert result.exit_code == 2, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: {args[-2] if args[0] == 'status' else '--html'} {long}"), line
    assert "is 300 bytes, longer than a file name may be here" in line


@pytest.mark.parametrize("command", ["scaffold", "register"])
def test_a_dry_run_records_nothing_so_a_read_only_workspace_is_not_refused(tmp_path, command):
    path, _ = _unwritable("read-only", tmp_path)
    result = _invoke(*COMMANDS[command](path), "--dry-run")
    assert result.exit_code == 2
    assert "/no-tree" in result.stderr and "--workdir" not in result.stderr, result.stderr


@pytest.mark.parametrize("where", ["EAGER", "COMPILE", "--log", "--catalog"])
@pytest.mark.parametrize("path", [str(DATA / ("a" * 300)), "/proc/self/mem"])
def test_integrate_names_a_profile_log_or_catalog_that_cannot_be_read(where, path):
    result = _invoke("integrate", *_read_args(where, path)[1:])
    assert result.exit_code == 2, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: {where} {path}") and "cannot be read" in line, line


def test_profile_refuses_a_model_name_too_long_for_its_profile_folder_before_running_the_model(tmp_path):
    stem, factory = "m" * 120, "f" * 120  # the --model-file text fits a file name; the folder named after it does not
    (tmp_path / f"{stem}.py").write_text(f"import pathlib\n\ndef {factory}():\n"
                                         f"    pathlib.Path({str(tmp_path / 'ran')!r}).write_text('ran')\n")
    result = _invoke("profile", "--model-file", f"{tmp_path / stem}.py:{factory}", "--mode", "eager",
                     "--out", str(tmp_path / "out"))
    assert result.exit_code == 2, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: --out {tmp_path / 'out'}: the profile folder, named after the model"), line
    assert "longer than a file name may be here" in line
    assert not (tmp_path / "ran").exists() and not (tmp_path / "out").exists()
