from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelRow:
    name: str  # what the workspace records it under: "flux", "cog_view4"
    class_name: str  # the diffusers class
    source: str  # "zoo" (hand-written tiny config and inputs) or "diffusers" (default config shrunk, inputs made)
    note: str  # the zoo's one line on what its config exercises
    checked: bool
    builds: bool | None  # with --check: one forward ran with the example inputs (None: not checked)
    size: str  # with --check: the size that ran ("tiny config", "one block config")
    problem: str  # with --check: why it does not build


@dataclass(frozen=True)
class ModelsReport:
    rows: tuple[ModelRow, ...]
    diffusers_version: str | None
    verdict: str  # "pass" | "fail" (a checked model does not build)
