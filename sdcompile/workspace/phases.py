"""The seven lifecycle phases, in order. Phase numbers follow the recipe."""

from __future__ import annotations

PHASES: tuple[str, ...] = ("analyze", "scaffold", "register", "verify", "debug", "integrate", "copy-audit")
PHASE_NUMBER = {name: i for i, name in enumerate(PHASES, start=1)}

# What a phase's verdict may be. "pass"/"fail" are gates; "info" records a phase that reports without a gate
# (e.g. scaffold deciding to reuse an existing group); "skipped" is a phase deliberately not run.
VERDICTS = ("pass", "fail", "info", "skipped")
