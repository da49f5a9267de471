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
    # without -v stderr holds the verdict line only (its word may be INFO; no log line)
    [line] = quiet.stderr.strip().splitlines()
    assert line.startswith(json.loads(quiet.stdout)["verdict"].upper() + ": ")
    assert "finished in" not in quiet.stderr
    assert "backends --json" in loud.stderr and "backends finished in" in loud.stderr, loud.stderr


def test_verbose_is_counted_and_documented():
    assert "-v, --verbose" in _sdcompile("--help").stdout
    twice = _sdcompile("-vv", "backends")
    assert twice.returncode == 0 and "backends finished in" in twice.stderr, twice.stderr


def test_verbose_says_what_a_model_command_built(tmp_path):
    loud = _sdcompile("-v", "analyze", "--model", "flux", "--op", "rmsnorm", "--workdir", str(tmp_path / "ws"))
    assert loud.returncode == 0, loud.stderr[-2000:]
    assert "built flux (FluxTransformer2DModel, tiny config) in bf16" in loud.stderr, loud.stderr[-2000:]


def test_in_one_process_each_command_logs_to_the_stderr_it_runs_with():
    """A test runner swaps sys.stderr per command: the log follows it rather than the first command's stream."""
    import logging

    from typer.testing import CliRunner

    from sdcompile.cli.app import app

    runner = CliRunner()
    try:
        for _ in range(2):
            result = runner.invoke(app, ["-v", "backends", "--json"])
            assert result.exit_code == 0, result.output
            assert "backends finished in" in result.stderr
            assert json.loads(result.stdout)["backends"]
    finally:
        logging.getLogger("sdcompile").setLevel(logging.WARNING)  # the rest of this process logs as without -v
