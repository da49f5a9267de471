"""Shared, expensive results for the analyze tests: a model is built and compiled once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent / "data"
HANDWRITTEN = DATA / "handwritten_model.py"


@pytest.fixture(scope="session")
def flux_bf16():
    from sdcompile.zoo.models import build_model

    return build_model("flux", "bf16")


@pytest.fixture(scope="session")
def flux_capture(flux_bf16):
    from sdcompile.graph.capture import capture_graphs

    return capture_graphs(flux_bf16.module, flux_bf16.inputs, model="flux", dtype="bf16")
