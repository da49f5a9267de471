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


class Decision(StrEnum):
    """What scaffold decided for a model and op, one name everywhere (scaffold.json, run, register, verify, the
    matrix): the value is what --json shows."""

    REUSE = "reuse"  # the target's groups already replace every site
    ALREADY_FUSED = "already fused"  # the model calls the fused op itself at every site
    GENERATE = "generate"  # a carrier written for the sites that need one
    NOTHING_LOCATED = "nothing located"  # no site of the op in the model
    CANNOT_GENERATE = "cannot generate"  # sites need a carrier, none can be written


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
