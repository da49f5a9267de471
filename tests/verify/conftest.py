"""Fixtures for verify: one fresh copy of the real MindIE-SD 3.1.0 tree per test module, loaded under emulation."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def module_tree(mindiesd_cache, tmp_path_factory):
    from sdcompile.core.target.package_cache import scratch_copy

    return scratch_copy(tmp_path_factory.mktemp("target") / "mindiesd-3.1.0")


@pytest.fixture
def target(module_tree):
    """The loaded target (cached while the same tree stays loaded; reloaded after a test loaded another)."""
    from sdcompile.core.target.discovery import find_target
    from sdcompile.core.target.loader import load_target

    return load_target(find_target(module_tree))
