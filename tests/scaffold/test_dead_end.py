"""A site nothing scaffold generates can serve (a norm applying its gain twice: no binding makes one fused RMSNorm
compute it) is refused site by site, nothing is written, and the next steps are `debug`, which explains why the
target's own groups miss the sites, and the hand-written way out."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from scaffold_helpers import git

from sdcompile.workspace.artifacts import ARTIFACTS

MODEL = f"{Path(__file__).parent / 'data' / 'transformed_weights.py'}:squared_gain"


@pytest.mark.slow
def test_a_dead_end_is_refused_with_the_debug_command_and_the_guide_next(target, tmp_path, cli):
    before = git(target, "status", "--porcelain", "--untracked-files=all")
    out = cli("scaffold", "--model-file", MODEL, "--name", "sq", "--op", "rmsnorm", "--repo", str(target),
              "--workdir", str(tmp_path / "ws"), "--json")
    assert out.exit_code == 1, out.stderr[-2000:]
    result = json.loads(out.stdout)
    assert result["decision"] == "cannot generate" and result["files"] == []
    assert result["sites"] and all(row["reason"]["code"] == "numerics" for row in result["sites"])
    assert git(target, "status", "--porcelain", "--untracked-files=all") == before
    debug = [step for step in result["next_steps"] if step.startswith("sdcompile debug")]
    assert len(debug) == 1
    assert shlex.split(debug[0], comments=True)[1:] == ["debug", "--model-file", MODEL, "--op", "rmsnorm", "--repo",
                                                        str(target), "--workdir", str(tmp_path / "ws")]
    # nothing scaffold generates covers RoPE: the hand-written way out is named, as a command that runs anywhere
    guide = [step for step in result["next_steps"] if step.startswith("sdcompile explain")]
    assert [shlex.split(g, comments=True) for g in guide] == [["sdcompile", "explain", "pattern-templates"]]
    assert "dead end" in guide[0] and cli(*shlex.split(guide[0], comments=True)[1:]).exit_code == 0


@pytest.mark.torch_independent  # reading the workspace's records
@pytest.mark.slow
def test_an_analysis_an_older_sdcompile_wrote_is_redone_not_refused(target, tmp_path, cli):
    """Phase 1's analysis.json is a cache of the model's analysis: one without schema_version (an older sdcompile's)
    makes scaffold run analyze again and carry on, as a missing one does."""
    ws = tmp_path / "ws"
    assert cli("analyze", "--model-file", MODEL, "--op", "rmsnorm", "--workdir", str(ws)).exit_code == 0
    path = ws / "transformed_weights-squared_gain" / "rmsnorm" / "analysis.json"
    doc = json.loads(path.read_text())
    del doc["schema_version"]
    path.write_text(json.dumps(doc))
    out = cli("scaffold", "--model-file", MODEL, "--name", "sq", "--op", "rmsnorm", "--repo", str(target),
              "--workdir", str(ws), "--json")
    result = json.loads(out.stdout)
    assert out.exit_code == 1 and result["decision"] == "cannot generate", out.stderr[-2000:]
    assert result["phase1_ran_first"] is True, result["phase1"]
    assert json.loads(path.read_text())["schema_version"] == ARTIFACTS["analysis"].version
