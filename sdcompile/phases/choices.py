"""The closed sets of values the phases accept, in one light module: the phases check their arguments against
them and the CLI builds its typed options (sdcompile.cli.options) from them, without importing the phases."""

from __future__ import annotations

SCAFFOLD_PATHS = ("auto", "replacement", "graph-pass")  # scaffold's and run's --path
DEBUG_STAGES = ("before-freezing", "after-freezing")  # debug's --stage
PROFILE_MODES = ("eager", "compile")  # profile's --mode
INFLATION_METRICS = ("auto", "time", "count")  # copy-audit's --inflation-metric
ATTENTION = ("2d", "3d")  # copy-audit's --attn
