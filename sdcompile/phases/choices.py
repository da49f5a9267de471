"""The closed sets of values the phases accept, in one light module: the phases check their arguments against
them and the CLI builds its typed options (sdcompile.cli.options) from them, without importing the phases."""

from __future__ import annotations

SCAFFOLD_PATHS = ("auto", "replacement", "graph-entry", "graph-pass")  # scaffold's and run's --path
# the paths whose carrier is a chain table matched on the graph's own nodes: a GraphPatternEntry, or (only on
# request: upstream forbids it) a custom graph pass after freeze()
TABLE_PATHS = ("graph-entry", "graph-pass")
DEBUG_STAGES = ("before-freezing", "after-freezing")  # debug's --stage
PROFILE_MODES = ("eager", "compile")  # profile's --mode
INFLATION_METRICS = ("auto", "time", "count")  # copy-audit's --inflation-metric
ATTENTION = ("2d", "3d")  # copy-audit's --attn
