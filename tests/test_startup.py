"""`sdcompile --help`, `status`, `backends` and `explain` must not import torch, diffusers or pandas (start-up time);
nor may the torch version gate of the commands that need torch (it reads torch's dist-info)."""

import subprocess
import sys

import pytest

HEAVY = ("torch", "diffusers", "pandas", "libcst", "jinja2")


@pytest.mark.parametrize("argv", [["--help"], ["status"], ["backends"], ["status", "--help"], ["explain"],
                                  ["doctor", "--help"], ["analyze", "--help"]])
def test_light_commands_import_nothing_heavy(argv, tmp_path):
    code = (
        "import sys\n"
        "from sdcompile.cli.app import main\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print('HEAVY=' + ','.join(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    heavy_line = [line for line in proc.stderr.splitlines() if line.startswith("HEAVY=")]
    assert heavy_line == ["HEAVY="], proc.stderr


def test_unexpected_errors_are_one_line_unless_debug(tmp_path):
    code = (
        "import sdcompile.phases.backends.phase as b\n"
        "def boom(*a, **k): raise ZeroDivisionError('boom')\n"
        "b.collect_backends = boom\n"
        "from sdcompile.cli.app import main\n"
        "main(['backends'])\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 70
    assert "internal error: ZeroDivisionError: boom" in proc.stderr and "Traceback" not in proc.stderr
    debug = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                           env={"SDCOMPILE_DEBUG": "1", "PATH": "/usr/bin"})
    assert "Traceback" in debug.stderr
    assert debug.returncode == 70  # the traceback is added, the exit code kept (1 would read as a failed gate)
    assert debug.stderr.splitlines()[-1].startswith("internal error: ZeroDivisionError: boom")


def test_debug_keeps_the_exit_code_of_bad_input(tmp_path):
    env = {"SDCOMPILE_DEBUG": "1", "PATH": "/usr/bin"}
    proc = subprocess.run([sys.executable, "-m", "sdcompile", "status", "--repo", str(tmp_path / "none")],
                          capture_output=True, text=True, cwd=tmp_path, env=env)
    assert proc.returncode == 2 and "Traceback" in proc.stderr
    assert proc.stderr.splitlines()[-1].startswith(f"error: {tmp_path / 'none'} is not a folder")


def test_the_help_lists_the_commands_without_building_one(tmp_path):
    """`sdcompile --help` names every command from cli.app.COMMANDS; importing a command's module (its options,
    their defaults' modules) or a catalog is start-up time the help does not need."""
    code = (
        "import sys\n"
        "from sdcompile.cli.app import COMMANDS, main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "loaded = [f'sdcompile.cli.{e.module}' for e in COMMANDS if f'sdcompile.cli.{e.module}' in sys.modules]\n"
        "print('LOADED=' + ','.join(loaded + [m for m in sys.modules if m.startswith('sdcompile.catalogs')]),\n"
        "      file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert [line for line in proc.stderr.splitlines() if line.startswith("LOADED=")] == ["LOADED="], proc.stderr
    from sdcompile.cli.app import COMMANDS

    listed = proc.stdout.split("Commands:", 1)[1]
    assert all(f"  {entry.name} " in listed for entry in COMMANDS), listed
