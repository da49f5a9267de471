"""Shared debug runs: each (model, groups, stage, dtype) is debugged once per session, in process."""

from __future__ import annotations

import pytest
from debug_helpers import CASES, MODULES


@pytest.fixture(scope="session")
def debug_runs(mindiesd_cache, tmp_path_factory):
    """`debug_runs(**run_debug kwargs)` -> DebugResult, computed once per distinct call in the session."""
    from sdcompile.phases.debug.phase import run_debug

    workdir = tmp_path_factory.mktemp("debug-ws")
    cache: dict[tuple, object] = {}

    def run(**kwargs):
        key = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in kwargs.items()))
        if key not in cache:
            cache[key] = run_debug(repo=mindiesd_cache, workdir=workdir, **kwargs)
        return cache[key]

    run.workdir = workdir
    return run


@pytest.fixture(scope="session")
def case_run(debug_runs):
    """`case_run("type3")` -> the DebugResult of that module against the group it is written for."""

    def run(case: str, stage: str | None = None):
        group, default_stage, dtype = CASES[case]
        return debug_runs(model_file=f"{MODULES}:{case}", groups=(group,), stage=stage or default_stage, dtype=dtype)

    return run
