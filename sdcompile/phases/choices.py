"""The closed sets of values the phases accept, in one light module: the phases check their arguments against
them and the CLI builds its typed options (sdcompile.cli.options) from them, without importing the phases."""

from __future__ import annotations

from enum import StrEnum


class Carrier(StrEnum):
    """What carries a fusion into MindIE-SD, one name everywhere: phase 1's path decision, scaffold's --path and the
    carrier a site needs (the value is what --path takes and --json shows)."""

    REPLACEMENT = "replacement"  # a register_replacement pattern in a pattern group
    GRAPH_ENTRY = "graph-entry"  # a GraphPatternEntry carrier, registered ahead of the pattern groups
    GRAPH_PASS = "graph-pass"  # a custom graph pass after freeze(): only on request, upstream forbids it


# what MindIE-SD's code and docs call each carrier (for output)
CARRIER_NAMES = {Carrier.REPLACEMENT: "register_replacement", Carrier.GRAPH_ENTRY: "GraphPatternEntry",
                 Carrier.GRAPH_PASS: "custom graph pass"}
SCAFFOLD_PATHS = ("auto", *(c.value for c in Carrier))  # scaffold's and run's --path
# the carriers that are a chain table matched on the graph's own nodes
TABLE_PATHS = (Carrier.GRAPH_ENTRY, Carrier.GRAPH_PASS)
DEBUG_STAGES = ("before-freezing", "after-freezing")  # debug's --stage
PROFILE_MODES = ("eager", "compile")  # profile's --mode
INFLATION_METRICS = ("auto", "time", "count")  # copy-audit's --inflation-metric
ATTENTION = ("2d", "3d")  # copy-audit's --attn
