"""The project's own defaults: `sdcompile.toml`, or `[tool.sdcompile]` in pyproject.toml, in the current folder or
the nearest parent that has one. The CLI feeds them to click as the root context's `default_map`, so every option
of that name takes them: a value given on the command line or in the option's environment variable still wins.

    # sdcompile.toml (or the same keys under [tool.sdcompile] in pyproject.toml)
    repo = "../MindIE-SD"       # --repo where $SDCOMPILE_REPO is read; relative to this file's folder
    workdir = ".sdcompile"      # --workdir
    min_cosine = 0.999          # --min-cosine of run, verify and integrate
    max_inflation = 2.0         # --max-inflation of run and copy-audit
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sdcompile.util.errors import BadInput

FILE = "sdcompile.toml"
PYPROJECT = "pyproject.toml"
# key -> (the option's parameter name, what its value must be)
KEYS: dict[str, tuple[str, type]] = {
    "repo": ("repo", Path),
    "workdir": ("workdir", Path),
    "min_cosine": ("min_cosine", float),
    "max_inflation": ("max_inflation", float),
}


@dataclass(frozen=True)
class ProjectConfig:
    path: Path | None  # the file read; None when there is none
    values: dict[str, Any]  # parameter name -> value (paths resolved against the file's folder)


def find_config(start: Path | None = None) -> Path | None:
    """The nearest sdcompile.toml, or pyproject.toml holding [tool.sdcompile], from `start` (the current folder)
    up; sdcompile.toml wins in a folder that has both."""
    folder = Path(start or os.getcwd()).resolve()
    for candidate in (folder, *folder.parents):
        own = candidate / FILE
        if own.is_file():
            return own
        pyproject = candidate / PYPROJECT
        if pyproject.is_file() and _has_table(pyproject):
            return pyproject
    return None


def load_config(start: Path | None = None) -> ProjectConfig:
    """The project config, checked: an unknown key or a value of the wrong type is BadInput naming file and key."""
    path = find_config(start)
    if path is None:
        return ProjectConfig(None, {})
    table = _read(path)
    if path.name == PYPROJECT:
        table = table["tool"]["sdcompile"]
    where = f"{path} [tool.sdcompile]" if path.name == PYPROJECT else str(path)
    if not isinstance(table, dict):
        raise BadInput(f"{where} is not a table of settings", f"write it as key = value lines ({', '.join(KEYS)})")
    values = {}
    for key, value in table.items():
        if key not in KEYS:
            from sdcompile.util.choices import UnknownChoice

            raise UnknownChoice("key", key, KEYS, message=f"{where}: unknown key {key!r}")
        param, kind = KEYS[key]
        values[param] = _checked(where, key, value, kind, path.parent)
    return ProjectConfig(path, values)


def _checked(where: str, key: str, value: Any, kind: type, folder: Path) -> Any:
    if kind is Path:
        if not isinstance(value, str) or not value:
            raise BadInput(f"{where}: {key} = {value!r} is not a path", f'write it as a string: {key} = "path"')
        return folder / Path(value).expanduser()
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadInput(f"{where}: {key} = {value!r} is not a number", f"write it as a number: {key} = 0.99")
    return float(value)


def _has_table(pyproject: Path) -> bool:
    # another project's pyproject.toml that does not parse is not ours to refuse: the search goes on past it
    try:
        tool = _read(pyproject).get("tool", {})
    except BadInput:
        return b"[tool.sdcompile" in pyproject.read_bytes()
    return isinstance(tool, dict) and "sdcompile" in tool


def _read(path: Path) -> dict:
    import tomllib

    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise BadInput(f"{path} cannot be read as TOML ({exc})", "fix the file, or remove it") from exc
