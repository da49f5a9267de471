"""Fixtures for `sdcompile scaffold`: a fresh copy of the real MindIE-SD 3.1.0 tree per test."""

from __future__ import annotations

from pathlib import Path

import pytest
from scaffold_helpers import fresh_tree


@pytest.fixture
def target(tmp_path) -> Path:
    return fresh_tree(tmp_path / "mindiesd-3.1.0")
