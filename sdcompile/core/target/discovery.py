"""Find the target MindIE-SD tree: --repo, else $SDCOMPILE_REPO, else upward from the current folder."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from sdcompile.util.errors import NotATarget

# The four files that make a folder a MindIE-SD tree (relative to the folder holding `mindiesd/`).
# `compiliation_config.py` is misspelt upstream; the misspelling is the real file name.
REQUIRED_FILES = (
    "mindiesd/compilation/compiliation_config.py",
    "mindiesd/compilation/passes/__init__.py",
    "mindiesd/compilation/passes/register_pattern_to_pass.py",
    "mindiesd/compilation/patterns/__init__.py",
)
ENV_VAR = "SDCOMPILE_REPO"


@dataclass(frozen=True)
class TargetTree:
    """A MindIE-SD source tree. `root` is the folder that holds the `mindiesd/` package."""

    root: Path
    version: str
    found_by: str  # "--repo", "$SDCOMPILE_REPO" or "search upward from <cwd>"

    @property
    def repo_for_commands(self) -> Path | None:
        """The --repo a printed next command carries so that it acts on this tree when pasted: the tree given with
        --repo or $SDCOMPILE_REPO (another shell may not set it); None when the command finds the tree again the way
        this one did, from the same folder (searching upward, the project config)."""
        return self.root if self.found_by in ("--repo", f"${ENV_VAR}") else None

    @property
    def package(self) -> Path:
        return self.root / "mindiesd"

    @property
    def compilation(self) -> Path:
        return self.package / "compilation"

    @property
    def config_file(self) -> Path:
        return self.compilation / "compiliation_config.py"

    @property
    def passes_dir(self) -> Path:
        return self.compilation / "passes"

    @property
    def passes_init(self) -> Path:
        return self.passes_dir / "__init__.py"

    @property
    def patterns_dir(self) -> Path:
        return self.compilation / "patterns"

    @property
    def patterns_init(self) -> Path:
        return self.patterns_dir / "__init__.py"

    @property
    def backend_file(self) -> Path:
        return self.compilation / "mindie_sd_backend.py"


def _normalise(folder: Path) -> Path:
    """Accept the folder holding `mindiesd/`, the `mindiesd/` folder itself, or its `compilation/` folder."""
    folder = folder.resolve()
    if folder.name == "compilation" and folder.parent.name == "mindiesd":
        return folder.parent.parent
    if folder.name == "mindiesd" and (folder / "compilation").is_dir():
        return folder.parent
    return folder


def missing_files(root: Path) -> list[str]:
    return [rel for rel in REQUIRED_FILES if not (root / rel).is_file()]


def read_version(root: Path) -> str:
    """The target's version from a wheel's dist-info beside `mindiesd/`, else setup files; 'unknown' otherwise."""
    for dist in sorted(root.glob("mindiesd-*.dist-info")):
        meta = dist / "METADATA"
        if meta.is_file():
            match = re.search(r"^Version:\s*(\S+)", meta.read_text(errors="replace"), re.M)
            if match:
                return match.group(1)
    for candidate in (root / "setup.py", root / "pyproject.toml", root / "mindiesd" / "version.py"):
        if candidate.is_file():
            match = re.search(r"""version\s*=\s*["']([^"']+)["']""", candidate.read_text(errors="replace"))
            if match:
                return match.group(1)
    return "unknown"


def _check(root: Path, found_by: str) -> TargetTree:
    if not root.is_dir():
        where = "" if found_by == "--repo" else f" (from {found_by})"
        raise NotATarget(f"{root}{where} is not a folder", "pass --repo with the folder that holds mindiesd/")
    missing = missing_files(root)
    if missing:
        raise NotATarget(
            f"{root} is not a MindIE-SD tree: missing {', '.join(missing)}",
            "pass --repo with the folder that holds mindiesd/compilation/",
        )
    return TargetTree(root=root, version=read_version(root), found_by=found_by)


def find_target(repo: Path | str | None = None, cwd: Path | None = None) -> TargetTree:
    """Resolve the target tree or raise NotATarget naming what is missing (exit 2)."""
    if repo:
        from sdcompile.util.option_source import said

        return _check(_normalise(Path(repo)), said("repo", "--repo"))
    env = os.environ.get(ENV_VAR)
    if env:
        return _check(_normalise(Path(env)), f"${ENV_VAR}")
    start = (cwd or Path.cwd()).resolve()
    for folder in (start, *start.parents):
        root = _normalise(folder)
        if (root / "mindiesd" / "compilation").is_dir():
            return _check(root, f"search upward from {start}")
    raise NotATarget(
        f"no MindIE-SD tree in {start} or any folder above it",
        f"pass --repo PATH (or set ${ENV_VAR}, or `repo` in sdcompile.toml) with the folder that holds mindiesd/; "
        "`sdcompile fetch-target ./MindIE-SD` copies the real release there",
    )
