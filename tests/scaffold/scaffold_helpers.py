"""Helpers for the scaffold tests: fresh copies of the real MindIE-SD 3.1.0 tree under git, linting generated files,
and running generated tests with pytest in a fresh process (the way a user runs them)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

RUFF_RULES = "E,F,W,I,B,UP"  # the project's own selection (pyproject.toml)
REGISTRATION_FILES = (
    "mindiesd/compilation/patterns/__init__.py",
    "mindiesd/compilation/passes/__init__.py",
    "mindiesd/compilation/compiliation_config.py",
)


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


def fresh_tree(folder: Path) -> Path:
    """A scratch copy of mindiesd 3.1.0 whose compilation package is committed to a new git repo."""
    from sdcompile.core.target.package_cache import ensure_unpacked, scratch_copy

    ensure_unpacked()
    root = scratch_copy(folder)
    git(root, "init", "-q")
    git(root, "-c", "user.email=t@example.com", "-c", "user.name=t", "add", "mindiesd/compilation")
    git(root, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "mindiesd 3.1.0")
    return root


def lint(*paths: Path) -> subprocess.CompletedProcess:
    """ruff with the project's rules and line length, ignoring any configuration near the files."""
    return subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--isolated", "--select", RUFF_RULES, "--line-length", "120",
         "--target-version", "py311", *map(str, paths)],
        capture_output=True, text=True,
    )


def py_compile(*paths: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "py_compile", *map(str, paths)], capture_output=True, text=True)


def run_generated_tests(root: Path, test_file: str, *extra: str) -> subprocess.CompletedProcess:
    """pytest on a generated test file inside the target tree, through sdcompile's emulation plugin."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SDCOMPILE_", "PYTEST_"))}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "sdcompile.testing.pytest_plugin", "-p", "no:cacheprovider", "-q",
         "-W", "ignore::DeprecationWarning", *extra, test_file],
        cwd=root, env=env, capture_output=True, text=True, timeout=900,
    )


def passed_count(output: str) -> int:
    import re

    found = re.search(r"(\d+) passed", output)
    return int(found.group(1)) if found else 0
