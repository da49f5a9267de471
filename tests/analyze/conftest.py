"""Shared, expensive results for the analyze tests.

pytest 9.2 with pytest-xdist 3.8 no longer honours `xdist_group` under `--dist loadgroup` (pytest-xdist issue
1386: the group suffix it writes into node ids is ignored), so tests sharing a fixture may land on both workers.
`flux_analysis` therefore computes once per run through a file lock and a pickle in the run's shared base temp.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from sdcompile.util.fsutil import exclusive_lock

DATA = Path(__file__).resolve().parent / "data"
HANDWRITTEN = DATA / "handwritten_model.py"


def _run_root(tmp_path_factory) -> Path:
    base = tmp_path_factory.getbasetemp()
    # under xdist each worker's base temp is <run>/popen-gwN; the run's folder is shared by the workers
    return base.parent if base.name.startswith("popen-gw") else base


@pytest.fixture(scope="session")
def flux_analysis(tmp_path_factory):
    """(AnalyzeResult, workdir) of `analyze --model flux --op all --after-freezing`, computed once per test run."""
    from sdcompile.phases.analyze.phase import analyze

    root = _run_root(tmp_path_factory)
    workdir, cache = root / "flux-analysis", root / "flux-analysis.pickle"
    with exclusive_lock(root / "flux-analysis.lock"):
        if cache.is_file():
            return pickle.loads(cache.read_bytes()), workdir
        result = analyze(model="flux", op="all", workdir=workdir, after_freezing=True)
        cache.write_bytes(pickle.dumps(result))
        return result, workdir


@pytest.fixture(scope="session")
def flux_bf16():
    from sdcompile.core.zoo.models import build_model

    return build_model("flux", "bf16")


@pytest.fixture(scope="session")
def flux_capture(flux_bf16):
    from sdcompile.core.graph.capture import capture_graphs

    return capture_graphs(flux_bf16.module, flux_bf16.inputs, model="flux", dtype="bf16")
