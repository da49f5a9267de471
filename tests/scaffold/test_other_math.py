"""A GELU site whose math the fused GELU does not compute (the exact GELU; the target's fused op is the tanh one) is
left as it is: it fails nothing when other sites are generated, and alone it is a dead end with nothing to try."""

from __future__ import annotations

from pathlib import Path

import pytest

from sdcompile.core.torchcompat.behaviours import holds

# before torch 2.12 the target's GELUPatternGroup registers as written and covers the tanh sites; from 2.12 it never
# matches, and scaffold generates a carrier for them
GENERATES = holds("decomposition-override")
MODEL = Path(__file__).resolve().parent / "data" / "gelu_math.py"


@pytest.mark.slow
def test_an_exact_gelu_keeps_its_math_and_the_tanh_sites_are_generated(target, tmp_path):
    from sdcompile.phases.scaffold.phase import scaffold

    result = scaffold(model_file=f"{MODEL}:build", name="mixed", op="gelu", repo=target, workdir=tmp_path / "ws",
                      dry_run=True)
    assert result.decision == ("generate" if GENERATES else "reuse") and result.gate == "pass", result.decision_reason
    needs = {row.site: row.need for row in result.sites}
    assert needs["blocks.0.act"] == "other math", needs
    assert {needs["blocks.1.act"], needs["blocks.2.act"]} == ({"graph-entry"} if GENERATES else {"covered"}), needs
    exact = next(row for row in result.sites if row.site == "blocks.0.act")
    assert exact.reason.facts == {"op": "aten.gelu.default", "key": "approximate", "has": "none", "wants": "tanh",
                                  "title": "GELU"}
    if GENERATES:
        assert all(row.check is not None and row.check.hit for row in result.sites if row.site != "blocks.0.act")
        assert result.decision_reason.facts["generated"] == 2


@pytest.mark.slow
def test_only_exact_gelus_is_a_dead_end_with_nothing_to_try(target, tmp_path):
    from sdcompile.phases.scaffold.facts import ScaffoldFacts
    from sdcompile.phases.scaffold.phase import scaffold

    result = scaffold(model_file=f"{MODEL}:build_exact", name="exact", op="gelu", repo=target,
                      workdir=tmp_path / "ws", dry_run=True)
    assert result.decision == "cannot generate" and result.gate == "fail"
    assert [row.need for row in result.sites] == ["other math"]
    assert ScaffoldFacts.of(result).other_math_only
    assert not any(" debug " in step or "explain" in step for step in result.next_steps), result.next_steps
    from sdcompile.lifecycle.matrix.outcomes import row_of

    assert row_of("exact", result).refusals == ("aten.gelu.default has approximate='none', and the fused GELU computes "
                                               "approximate='tanh' …",)
