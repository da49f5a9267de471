"""Closed sets of values (an op, a dtype, a --path, a backend, a topic, a config key): one check for all of them,
whose error says the closest known value ("did you mean") before the full list.

The CLI turns the suggestion into the command line as typed with the value replaced (`UnknownChoice.suggestion`),
so the fix can be pasted; the library API gets the same one-line error without it.
"""

from __future__ import annotations

from collections.abc import Iterable
from difflib import get_close_matches

from sdcompile.util.errors import BadInput


def closest(value: object, choices: Iterable[str]) -> str | None:
    """The known value `value` most likely misspells (case-insensitive), or None when none is close."""
    known = {str(c).lower(): str(c) for c in choices}
    match = get_close_matches(str(value).strip().lower(), list(known), n=1, cutoff=0.6)
    return known[match[0]] if match else None


class UnknownChoice(BadInput):
    """A value outside a closed set. `suggestion`: the closest known value, if any; `value`: what was given."""

    def __init__(self, what: str, value: object, choices: Iterable[str], *, message: str | None = None,
                 hint: str = "", also: Iterable[str] = ()):
        """`also`: other spellings the value may be a misspelling of (a group's flag beside its name), suggested
        but not listed."""
        self.choices = tuple(str(c) for c in choices)
        self.value = str(value)
        self.suggestion = closest(value, (*self.choices, *also))
        self.hint = hint
        super().__init__(message or f"unknown {what} {self.value!r}", self._fix())

    def _fix(self, command: str | None = None) -> str:
        listed = f"use one of {', '.join(self.choices)}{self.hint}"
        if self.suggestion is None:
            return listed
        pasteable = f": `{command}`" if command else ""
        return f"did you mean {self.suggestion}{pasteable}? ({listed})"

    def with_command(self, command: str) -> None:
        """Name the corrected command line in the fix (the CLI knows it, the library does not)."""
        self.fix = self._fix(command)


def check_choice(value: object, choices: Iterable[str], what: str, *, hint: str = "") -> str:
    """`value` (stripped, lower-cased) when it is one of `choices`; UnknownChoice (exit 2) naming the closest one
    otherwise. `what` names the kind of value in the message: "op", "--path", "backend"."""
    choices = tuple(choices)
    key = str(value).strip().lower()
    for choice in choices:
        if key == str(choice).lower():
            return str(choice)
    raise UnknownChoice(what, value, choices, hint=hint)
