"""Fixtures for `sdcompile register`: the real MindIE-SD tree under git, with a hand-written Flux RMSNorm pattern."""

from __future__ import annotations

from pathlib import Path

import pytest
from register_helpers import COMPILATION, FLUX_RMSNORM_PATTERN, git, write_pattern


@pytest.fixture
def target(mindiesd_tree) -> Path:
    """The real 3.1.0 tree, its compilation package committed to a fresh git repo, plus flux_rmsnorm_pattern.py
    (untracked, as scaffold would leave it)."""
    git(mindiesd_tree, "init", "-q")
    git(mindiesd_tree, "add", str(COMPILATION))
    git(mindiesd_tree, "commit", "-qm", "mindiesd 3.1.0")
    write_pattern(mindiesd_tree, "flux_rmsnorm_pattern", FLUX_RMSNORM_PATTERN)
    return mindiesd_tree
