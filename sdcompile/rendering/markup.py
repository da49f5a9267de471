"""Rich markup limited to the styles sdcompile's renderers write, so text they interpolate keeps its brackets.

Renderers print prose and data inside markup (`f"[bold]{title}[/]: {why}"`). To rich, any `[word]` is a tag: a
catalog's `[primitive]` table, a TOML line's `[inputs]`, a source line's `x[idx]` would vanish from the output
without a word. Here a bracket is markup only when it names the styles below (or closes one); every other bracket
is escaped, once, where the sink renders a string (output.SinkConsole, tables), not at each renderer's call.
"""

from __future__ import annotations

import re

from rich.text import Text

# What the renderers write as markup: `[bold]`, `[red]`, `[bold red]`, `[/]`. A bracketed index in data that spells
# one of these is the one thing still read as a style.
STYLE_WORDS = frozenset({"bold", "dim", "italic", "underline", "red", "green", "yellow", "cyan", "blue", "magenta",
                         "white"})

# rich's own tag syntax (rich.markup.RE_TAGS): a tag starts with a-z, '#', '/' or '@'; backslashes before it escape it
_TAG = re.compile(r"(\\*)\[([a-z#/@][^[]*?)]")


def _is_style(body: str) -> bool:
    name = body.removeprefix("/")
    return name == "" and body == "/" or bool(name) and all(word in STYLE_WORDS for word in name.split())


def _keep_or_escape(match: re.Match) -> str:
    backslashes, body = match.group(1), match.group(2)
    if len(backslashes) % 2 or _is_style(body):
        return match.group(0)  # escaped already, or a style the renderer meant
    return f"{backslashes}\\[{body}]"


def styles_only(markup: str) -> str:
    """`markup` with every tag but the renderers' styles escaped."""
    return _TAG.sub(_keep_or_escape, markup) if "[" in markup else markup


def text_from_markup(markup: str) -> Text:
    return Text.from_markup(styles_only(markup))
