"""Typed errors. Core code raises these; `cli.app.main` maps them to one line and an exit code.

Exit codes (documented in README and docs/cli.md):
  0 ok, 1 a gate failed, 2 bad input or usage, 3 the environment lacks something asked for.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_ENVIRONMENT = 3


class SdcompileError(Exception):
    """Base error: `message` names the problem, `fix` says what to do about it."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, message: str, fix: str | None = None):
        super().__init__(message)
        self.message = message
        self.fix = fix

    def one_line(self) -> str:
        return f"{self.message} — {self.fix}" if self.fix else self.message


class BadInput(SdcompileError):
    """The user gave something we cannot use (unknown model, malformed CSV, not a MindIE-SD tree)."""

    exit_code = EXIT_BAD_INPUT


class NotATarget(BadInput):
    """The folder is not a MindIE-SD source tree."""


class EnvironmentMissing(SdcompileError):
    """Something the command needs is not on this machine (e.g. a real NPU for a torchair run)."""

    exit_code = EXIT_ENVIRONMENT


class GateFailed(SdcompileError):
    """A phase ran but its gate did not pass. Commands usually render their result and exit 1 instead;
    this is for the cases where there is no result to render."""

    exit_code = EXIT_GATE_FAILED
