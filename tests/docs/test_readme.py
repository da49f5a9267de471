"""README.md's commands, and those of docs/lifecycle.md (the findings behind its short version), run as written and
print what they quote. Their `sdcompile run` commands are the scenarios tests/run runs (`shared_cli`: each runs
once per test run, from an empty folder); any other command runs in the folder of the run before it, as a reader
would type it next."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from guide_commands import check, console_blocks

ROOT = Path(__file__).resolve().parents[2]
# (model, op) of a README `sdcompile run` -> its shared folder (the same as tests/run/test_run_cli.py's)
RUN_FOLDERS = {("flux", "rmsnorm"): "run-flux", ("wan", "rmsnorm"): "run-wan",
               ("mochi", "rope"): "run-mochi-rope", ("flux", "gelu"): "run-flux-gelu"}


def _pair(argv: list[str]) -> tuple[str, str]:
    return argv[argv.index("--model") + 1], argv[argv.index("--op") + 1]


@pytest.mark.slow
@pytest.mark.parametrize(("page", "runs"), [("README.md", 2), ("docs/lifecycle.md", 1)])
def test_readme_commands_run_as_written(page, runs, shared_cli, cli):
    commands = console_blocks(ROOT / page)
    assert [c.command.split()[1] for c in commands].count("run") >= runs
    outcomes, cwd = [], None
    for cmd in commands:
        argv = shlex.split(cmd.command)[1:]
        if argv[0] == "run":
            out, cwd = shared_cli(RUN_FOLDERS[_pair(argv)], *argv)
        else:
            assert cwd is not None, f"{page}: `{cmd.command}` comes before any `sdcompile run`"
            out = cli(*argv, cwd=cwd)
        outcomes.append(out)
    problems = check(commands, outcomes)
    assert not problems, "\n\n".join(problems)


def test_readme_starts_with_the_two_commands():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    first_block = text.split("```sh\n", 1)[1].split("```", 1)[0]
    assert [line.split()[:2] for line in first_block.strip().splitlines()] == [["make", "demo"], ["make", "test"]]
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    demo = makefile.split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    assert "run --model flux --op rmsnorm" in demo  # the demo is the README's first run
