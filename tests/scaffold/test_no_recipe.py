"""An op scaffold has no recipe for (RoPE: its forms differ between models) is refused site by site, nothing is
written, and the next step is `debug`, which explains why the target's own groups for the op miss the sites."""

from __future__ import annotations

import json
import shlex

import pytest
from scaffold_helpers import git


@pytest.mark.slow
def test_flux_rope_is_refused_with_the_debug_command_next(target, tmp_path, cli):
    before = git(target, "status", "--porcelain", "--untracked-files=all")
    out = cli("scaffold", "--model", "flux", "--op", "rope", "--repo", str(target), "--workdir", str(tmp_path / "ws"),
              "--json")
    assert out.exit_code == 1, out.stderr[-2000:]
    result = json.loads(out.stdout)
    assert result["decision"] == "cannot generate" and result["files"] == []
    assert result["sites"] and all("no replacement recipe for rope" in row["reason"] for row in result["sites"])
    assert git(target, "status", "--porcelain", "--untracked-files=all") == before
    debug = [step for step in result["next_steps"] if step.startswith("sdcompile debug")]
    assert len(debug) == 1
    assert shlex.split(debug[0], comments=True)[1:] == ["debug", "--model", "flux", "--op", "rope", "--repo",
                                                        str(target), "--workdir", str(tmp_path / "ws")]
    # nothing scaffold generates covers RoPE: the hand-written way out is named, as a command that runs anywhere
    guide = [step for step in result["next_steps"] if step.startswith("sdcompile explain")]
    assert [shlex.split(g, comments=True) for g in guide] == [["sdcompile", "explain", "pattern-templates"]]
    assert "dead end" in guide[0] and cli(*shlex.split(guide[0], comments=True)[1:]).exit_code == 0


@pytest.mark.slow
def test_an_analysis_an_older_sdcompile_wrote_is_redone_not_refused(target, tmp_path, cli):
    """Phase 1's analysis.json is a cache of the model's analysis: one without schema_version (an older sdcompile's)
    makes scaffold run analyze again and carry on, as a missing one does."""
    ws = tmp_path / "ws"
    assert cli("analyze", "--model", "flux", "--op", "rope", "--workdir", str(ws)).exit_code == 0
    path = ws / "flux" / "rope" / "analysis.json"
    doc = json.loads(path.read_text())
    del doc["schema_version"]
    path.write_text(json.dumps(doc))
    out = cli("scaffold", "--model", "flux", "--op", "rope", "--repo", str(target), "--workdir", str(ws), "--json")
    result = json.loads(out.stdout)
    assert out.exit_code == 1 and result["decision"] == "cannot generate", out.stderr[-2000:]
    assert "analyze ran first" in result["phase1"], result["phase1"]
    assert json.loads(path.read_text())["schema_version"] == 1
