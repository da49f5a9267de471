"""Helpers shared by the debug tests (imported by name: pytest puts this folder on sys.path)."""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
MODULES = DATA / "mismatch_modules.py"

# factory -> (group, stage, dtype) it is written against
CASES = {
    "control": ("WanRmsNormPatternGroup", "before-freezing", "bf16"),
    "type1": ("WanRmsNormPatternGroup", "before-freezing", "bf16"),
    "type2": ("WanRmsNormPatternGroup", "before-freezing", "bf16"),
    "type3": ("WanRmsNormPatternGroup", "before-freezing", "bf16"),
    "type4": ("WanRmsNormPatternGroup", "before-freezing", "bf16"),
    "type5": ("WanRmsNormPatternGroup", "before-freezing", "bf16"),
    "type6": ("MiniMaxH3RopePatternGroup", "after-freezing", "fp32"),
    "type7": ("MiniMaxH3RopePatternGroup", "after-freezing", "fp32"),
}


def only_group(site):
    assert len(site.groups) == 1, [g.group for g in site.groups]
    return site.groups[0]


def closest(group_at_site):
    return next(p for p in group_at_site.patterns if p.pattern == group_at_site.closest)
