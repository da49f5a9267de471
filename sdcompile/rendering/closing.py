"""How every command's output ends: the commands to run next (one a line, never wrapped, so each pastes whole),
then exactly one verdict line, the last line printed."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from rich.console import Console
from rich.markup import escape

# The words a verdict line starts with; the golden tests check that the last line starts with one of them.
# One vocabulary for every command: a gate passed, failed, or the command only reports (INFO, DRY RUN).
VERDICT_STYLE = {"PASS": "green", "FAIL": "red", "INFO": "cyan", "DRY RUN": "cyan"}
VERDICT_WORDS = tuple(VERDICT_STYLE)


class Verdict(NamedTuple):
    """A command's closing line as data: its word (one of VERDICT_WORDS, decided from the result's typed fields) and
    its text (plain, escaped when printed). `--json` takes the word from here and renders nothing else."""

    word: str
    text: str

    @property
    def line(self) -> str:
        return f"{self.word}: {self.text}"


def close(console: Console, verdict: Verdict) -> None:
    """End a rendering with its verdict (the renderer's own `verdict(result)`), the word styled, as one line at any
    width (a log greps it, `| tail -1` reads it): the terminal folds it."""
    style = VERDICT_STYLE.get(verdict.word, "white")
    console.print(f"[{style}]{verdict.word}[/]: {escape(verdict.text)}", highlight=False, soft_wrap=True)


def print_commands(console: Console, commands: Iterable[str], heading: str = "next:") -> None:
    """Commands one a line under `heading`, soft-wrapped: a terminal may fold a long one, but a copy pastes whole
    (a command is never broken into lines)."""
    commands = list(commands)
    if not commands:
        return
    console.print(heading, highlight=False)
    for command in commands:
        console.print(f"  {escape(command)}", highlight=False, soft_wrap=True)
