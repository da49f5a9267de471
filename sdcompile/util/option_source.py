"""Where the running command's value of an option came from, when not from its own flag: the CLI records it after
parsing (`$SDCOMPILE_REPO`, `repo in /path/sdcompile.toml`), so what reports the value can say so ("found by
$SDCOMPILE_REPO") rather than name a flag the user never typed. Empty for library calls: the argument is theirs."""

from __future__ import annotations

_sources: dict[str, str] = {}


def record(sources: dict[str, str]) -> None:
    """This command's sources: {parameter name: where its value came from}; replaces the previous command's."""
    _sources.clear()
    _sources.update(sources)


def said(param: str, flag: str) -> str:
    """Where `param`'s value came from: `flag` unless the CLI recorded an environment variable or config file."""
    return _sources.get(param, flag)
