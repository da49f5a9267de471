"""Catalogs as data (TOML): backends, and the tables later phases add. `load(name)` reads one and checks it against
its declared schema (catalogs/schemas.py), so a malformed catalog is exit 2 naming the file, the entry and the field.

`SDCOMPILE_CATALOG_DIR`, when set, names a folder to read every catalog from instead of the installed package's
(each `<name>.toml` must be there): a hook for trying an edited catalog, and for the tests of malformed ones.
"""

from __future__ import annotations

import os
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

from sdcompile.catalogs.schemas import SCHEMAS
from sdcompile.catalogs.validate import CatalogError, check
from sdcompile.util.errors import BadInput

CATALOG_DIR_ENV = "SDCOMPILE_CATALOG_DIR"


@cache
def load(name: str) -> dict[str, Any]:
    """Parse `sdcompile/catalogs/<name>.toml` (`ops/<op>` for an op's file) and check its schema (cached; treat
    the result as read-only)."""
    text, source, fix = _read(name)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(f"{source} is not valid TOML ({exc})", fix) from exc
    check(data, SCHEMAS.get(name.split("/")[0], {}), source, fix)  # ops/<op>: every op file has the "ops" schema
    return data


def _read(name: str) -> tuple[str, str, str]:
    """The catalog's text, how messages name its file, and the fix for a malformed one."""
    override = os.environ.get(CATALOG_DIR_ENV)
    if override:
        path = Path(override) / f"{name}.toml"
        fix = f"fix {path}, or unset {CATALOG_DIR_ENV} to use the installed catalogs"
        try:
            return path.read_text(encoding="utf-8"), str(path), fix
        except (OSError, UnicodeDecodeError) as exc:
            raise BadInput(f"cannot read catalog {path} ({exc})", fix) from exc
    # beside this module (package data, installed unzipped): importlib.resources would cost start-up ~8 ms
    text = Path(__file__).parent.joinpath(*f"{name}.toml".split("/")).read_text(encoding="utf-8")
    return text, f"catalogs/{name}.toml", f"fix sdcompile/catalogs/{name}.toml (or reinstall sdcompile)"
