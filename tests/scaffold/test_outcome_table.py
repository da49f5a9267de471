"""docs/pattern-templates.md's per-model outcome tables are what scaffold does: every zoo model has a row for each
torch state, and rows regenerated here (a model scaffold generates for, one it partly refuses) equal the page's for
the running torch."""

from __future__ import annotations

from pathlib import Path

import pytest

GUIDE = Path(__file__).parents[2] / "docs" / "pattern-templates.md"


def test_every_zoo_model_has_a_row_for_each_torch_state():
    from sdcompile.core.zoo.models import zoo_entries
    from sdcompile.lifecycle.matrix.outcomes import outcome_section, section_rows

    page = GUIDE.read_text(encoding="utf-8")
    for op in ("adaln", "rope"):
        for torch_state in ("torch>=2.12", "torch<2.12"):
            assert list(section_rows(page, outcome_section(op, torch_state))) == list(zoo_entries()), (op, torch_state)


@pytest.mark.slow
@pytest.mark.parametrize(("op", "model"), [("adaln", "wan"), ("adaln", "sd3"), ("rope", "flux"), ("rope", "ltx")])
def test_a_row_is_what_scaffold_does_on_this_torch(op, model, target, tmp_path):
    from sdcompile.lifecycle.matrix.outcomes import outcome_section, row_of, section_rows
    from sdcompile.phases.scaffold.phase import scaffold

    rows = section_rows(GUIDE.read_text(encoding="utf-8"), outcome_section(op))
    got = row_of(model, scaffold(model=model, op=op, repo=target, workdir=tmp_path / "ws", dry_run=True, path="auto"))
    assert got.markdown() == rows[model]


def test_no_zoo_model_gets_a_custom_graph_pass_on_either_torch():
    """--path auto never writes a custom graph pass (forbidden upstream): every generated row's carrier is a
    register_replacement group or a GraphPatternEntry carrier, on both torch states of both tables."""
    from sdcompile.lifecycle.matrix.outcomes import HEADER, outcome_section, section_rows
    from sdcompile.phases.choices import CARRIER_NAMES, Carrier

    page = GUIDE.read_text(encoding="utf-8")
    allowed = {CARRIER_NAMES[Carrier.REPLACEMENT], CARRIER_NAMES[Carrier.GRAPH_ENTRY], "–"}
    assert HEADER[0].split("|")[3].strip() == "carrier"
    for op in ("adaln", "rope"):
        for torch_state in ("torch>=2.12", "torch<2.12"):
            for model, row in section_rows(page, outcome_section(op, torch_state)).items():
                carriers = {c.strip() for c in row.split("|")[3].split(",")}
                assert carriers <= allowed, (op, torch_state, model, row)
                assert ("graph pass" in row) is False, row
