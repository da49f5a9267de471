"""The real MindIE-SD source from the package registry, fetched once into a cache outside any repo.

`pip download mindiesd==<version> --no-deps` gives a wheel whose `mindiesd/` folder is the tree sdcompile
acts on. It is unpacked once under $SDCOMPILE_CACHE (default ~/.cache/sdcompile) and copied out fresh for
every use that edits it (tests, the demo, `sdcompile run`), so the cached copy is never modified.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from sdcompile.util.errors import BadInput, EnvironmentMissing
from sdcompile.util.fsutil import exclusive_lock

DEFAULT_VERSION = "3.1.0"
PACKAGE = "mindiesd"
# Files this large (the NPU kernels and plugins) are hard-linked into copies instead of copied:
# sdcompile never edits them and a full copy of the 180 MB tree per test would dominate the suite.
_LINK_AT_BYTES = 256 * 1024


def cache_root() -> Path:
    return Path(os.environ.get("SDCOMPILE_CACHE", Path.home() / ".cache" / "sdcompile"))


def _download_wheel(version: str, dest: Path) -> Path:
    base = [sys.executable, "-m", "pip", "download", f"{PACKAGE}=={version}", "--no-deps", "-d", str(dest)]
    attempts = [
        base,
        # The wheel is tagged cp311/manylinux; on another interpreter ask for that tag explicitly (it is pure
        # source for our purposes: we read the .py files and never load its binaries).
        [*base, "--only-binary=:all:", "--python-version", "3.11", "--platform", "manylinux_2_34_x86_64"],
    ]
    errors = []
    for cmd in attempts:
        proc = subprocess.run(cmd, capture_output=True, text=True)
        wheels = sorted(dest.glob(f"{PACKAGE}-{version}-*.whl"))
        if proc.returncode == 0 and wheels:
            return wheels[0]
        errors.append((proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["(no output)"])
    raise EnvironmentMissing(
        f"could not download {PACKAGE}=={version} with pip: {errors[-1][0]}",
        "check the package registry is reachable, or pass --repo with a MindIE-SD checkout",
    )


def ensure_unpacked(version: str = DEFAULT_VERSION) -> Path:
    """Path of the cached, unpacked wheel (holds `mindiesd/` and its dist-info). Downloads on first use."""
    target = cache_root() / f"{PACKAGE}-{version}"
    if (target / PACKAGE / "compilation").is_dir():
        return target
    with exclusive_lock(cache_root() / f".{PACKAGE}-{version}.lock"):
        if (target / PACKAGE / "compilation").is_dir():
            return target
        with tempfile.TemporaryDirectory(dir=cache_root()) as tmp:
            wheel = _download_wheel(version, Path(tmp))
            staging = Path(tmp) / "unpacked"
            try:
                with zipfile.ZipFile(wheel) as zf:
                    zf.extractall(staging)
            except zipfile.BadZipFile as exc:
                raise BadInput(f"{wheel.name} is not a valid wheel ({exc})", "delete the cache and retry") from exc
            if not (staging / PACKAGE / "compilation").is_dir():
                raise BadInput(f"{wheel.name} has no {PACKAGE}/compilation folder", "is this a MindIE-SD release?")
            if target.exists():
                shutil.rmtree(target)
            os.replace(staging, target)
    return target


def _copy_or_link(src: str, dst: str) -> None:
    if os.path.getsize(src) >= _LINK_AT_BYTES and not src.endswith(".py"):
        try:
            os.link(src, dst)
            return
        except OSError:
            pass
    shutil.copy2(src, dst)


def scratch_copy(dest: Path, version: str = DEFAULT_VERSION) -> Path:
    """A fresh, editable copy of the real tree at `dest` (which must not exist yet). Returns `dest`."""
    return copy_tree(ensure_unpacked(version), dest)


def copy_tree(source: Path, dest: Path) -> Path:
    """A fresh, editable copy of the tree at `source` (the folder holding mindiesd/) at `dest`: Python sources are
    copied, large data files (kernel binaries) hard-linked where the file system allows, caches and VCS folders left
    out. Returns `dest`."""
    dest = Path(dest)
    if dest.exists() and any(dest.iterdir()):
        raise BadInput(f"{dest} already exists and is not empty", "choose a new folder or delete it first")
    dest.mkdir(parents=True, exist_ok=True)
    skip = shutil.ignore_patterns("__pycache__", ".git", ".sdcompile")
    for item in Path(source).iterdir():
        if item.name in (".git", "__pycache__", ".sdcompile"):
            continue
        if item.is_dir():
            shutil.copytree(item, dest / item.name, copy_function=_copy_or_link, ignore=skip, symlinks=True)
        else:
            shutil.copy2(item, dest / item.name)
    return dest
