"""How every command's output ends: the commands to run next (one a line, never wrapped, so each pastes whole),
then exactly one verdict line, the last line printed."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console
from rich.markup import escape

# The words a verdict line starts with; the golden tests check that the last line starts with one of them.
# One vocabulary for every command: a gate passed, failed, or the command only reports (INFO, DRY RUN).
VERDICT_STYLE = {"PASS": "green", "FAIL": "red", "INFO": "cyan", "DRY RUN": "cyan"}
VERDICT_WORDS = tuple(VERDICT_STYLE)


def verdict_text(word: str, text: str, sep: str = ": ") -> str:
    """`PASS: text` with the word styled (rich markup; `text` is markup too: escape what is not)."""
    return f"[{VERDICT_STYLE.get(word, 'white')}]{word}[/]{sep}{text}"


def print_verdict(console: Console, word: str, text: str, sep: str = ": ") -> None:
    """The verdict as one line at any width (a log greps it, `| tail -1` reads it): the terminal folds it."""
    console.print(verdict_text(word, text, sep), highlight=False, soft_wrap=True)


def print_verdict_line(console: Console, line: str) -> None:
    """A plain-text `WORD: text` verdict (a renderer's verdict_line) printed as print_verdict prints one."""
    word, _, text = line.partition(": ")
    print_verdict(console, word, escape(text))


def print_commands(console: Console, commands: Iterable[str], heading: str = "next:") -> None:
    """Commands one a line under `heading`, soft-wrapped: a terminal may fold a long one, but a copy pastes whole
    (a command is never broken into lines)."""
    commands = list(commands)
    if not commands:
        return
    console.print(heading, highlight=False)
    for command in commands:
        console.print(f"  {escape(command)}", highlight=False, soft_wrap=True)
