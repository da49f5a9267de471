"""Runs several `sdcompile` commands in one process, each through the real entry point (`sdcompile.cli.app.main`),
and prints one JSON list of {exit_code, stdout, stderr}: a guide's commands pay for importing torch, diffusers and
the target once instead of once per command, as `sdcompile run` does.

    python guide_runner.py < commands.json        # [["scaffold", "--model", "flux", ...], ...]

Commands in one batch share a device mode (the caller starts a new process when a command needs another)."""

from __future__ import annotations

import contextlib
import io
import json
import sys


def run_one(argv: list[str]) -> dict:
    from sdcompile.cli.app import main

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return {"exit_code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


def main() -> None:
    commands = json.loads(sys.stdin.read())
    real_stdout = sys.stdout
    results = [run_one(argv) for argv in commands]
    real_stdout.write(json.dumps(results))


if __name__ == "__main__":
    main()
