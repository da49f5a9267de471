"""Every need scaffold decides for a site reads back from its record: a site whose code ran but is in no captured
graph (Qwen-Image's second GELU) was written as a bare "not in the graph" no Need member named, so scaffold.json
could not be read back (the run scaffolded again on resume, and the matrix could not say what scaffold decided)."""

from __future__ import annotations

from types import SimpleNamespace

from sdcompile.phases.scaffold.results import Need
from sdcompile.phases.scaffold.survey import _need


def test_a_site_outside_every_graph_gets_a_need_that_reads_back():
    site = SimpleNamespace(producer_only=False, unmodulated=False, problem=None)
    need, _reason, generate = _need(site, SimpleNamespace(status="not in the graph"), None, False, None)
    assert need is Need.NOT_IN_GRAPH and not generate
    assert Need(str(need)) is Need.NOT_IN_GRAPH  # what from_jsonable does with the record's value
