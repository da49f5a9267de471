"""`sdcompile -v`: stdlib logging through rich on stderr, only when asked, never touching stdout."""

import json
import subprocess
import sys


def _sdcompile(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sdcompile", *args], capture_output=True, text=True, timeout=120)


def test_verbose_logs_the_command_on_stderr_and_leaves_json_stdout_alone():
    quiet, loud = _sdcompile("backends", "--json"), _sdcompile("-v", "backends", "--json")
    assert quiet.returncode == loud.returncode == 0
    assert json.loads(loud.stdout) == json.loads(quiet.stdout)
    assert "INFO" not in quiet.stderr and "finished in" not in quiet.stderr
    assert "backends --json" in loud.stderr and "backends finished in" in loud.stderr, loud.stderr


def test_verbose_is_counted_and_documented():
    assert "-v, --verbose" in _sdcompile("--help").stdout
    twice = _sdcompile("-vv", "backends")
    assert twice.returncode == 0 and "backends finished in" in twice.stderr, twice.stderr
