from __future__ import annotations

from pathlib import Path

import typer

from sdcompile.cli import options
from sdcompile.rendering.closing import Verdict, close


def fetch_target(
    dest: Path = typer.Argument(..., help="New folder to create the copy in (must not exist or be empty)."),
    version: str = typer.Option("3.1.0", "--version", help="MindIE-SD release to fetch."),
    json_: bool = options.Json,
) -> None:
    """Copy the real MindIE-SD source tree (from the package registry, cached once) into DEST to work on."""
    from sdcompile.core.target.discovery import find_target
    from sdcompile.core.target.package_cache import ensure_unpacked, scratch_copy
    from sdcompile.rendering.output import emit, message
    from sdcompile.util.input_checks import writable_dir

    writable_dir(dest, "DEST")  # before the release is downloaded and unpacked
    message(f"fetching mindiesd=={version} (cached under {ensure_unpacked(version).parent}) ...")
    root = _whole_or_none(dest, lambda: scratch_copy(dest, version))
    tree = find_target(root)
    result = {"root": str(tree.root), "version": tree.version}
    emit(result, json_, render_fetch, fetch_verdict)


def render_fetch(console, result: dict) -> None:
    close(console, fetch_verdict(result))


def fetch_verdict(result: dict) -> Verdict:
    return Verdict("PASS", f"MindIE-SD {result['version']} source copied to {result['root']}")


def _whole_or_none(dest: Path, copy):
    """Run `copy` into `dest`; if it fails or is interrupted (Ctrl-C), remove what it wrote there, so DEST is left
    as it was (missing, or empty) rather than half a tree. A DEST that already holds files is not touched: the copy
    refuses it."""
    import shutil

    existed = dest.exists()
    if existed and (not dest.is_dir() or any(dest.iterdir())):
        return copy()  # refused before anything is written
    try:
        return copy()
    except BaseException:
        if not existed:
            shutil.rmtree(dest, ignore_errors=True)
        elif dest.is_dir():
            for child in dest.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child, ignore_errors=True)
                else:
                    child.unlink(missing_ok=True)
        raise
