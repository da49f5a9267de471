from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SizeCheck:
    """One size of a model, built and run once with its example inputs (`sdcompile models --check`)."""

    size: str  # "tiny" | "real"
    builds: bool  # built and ran one forward
    config: str  # the config that ran: "tiny config", "one block config", "real config, 1 layer"
    parameters: int | None  # of what was built (None: not built)
    full_parameters: int | None  # real: of the whole real config (counted on the meta device, nothing allocated)
    problem: str  # why it does not build ("" when it does)


@dataclass(frozen=True)
class ModelRow:
    name: str  # what the workspace records it under: "flux", "cog_view4"
    class_name: str  # the diffusers class
    source: str  # "zoo" (hand-written tiny config and inputs) or "diffusers" (default config shrunk, inputs made)
    note: str  # the zoo's one line on what its config exercises
    checked: tuple[SizeCheck, ...]  # with --check: one per size checked

    @property
    def builds(self) -> bool | None:
        """Every checked size builds (None: not checked)."""
        return all(c.builds for c in self.checked) if self.checked else None


@dataclass(frozen=True)
class ModelsReport:
    rows: tuple[ModelRow, ...]
    diffusers_version: str | None
    sizes: tuple[str, ...]  # the sizes --check built ("tiny", "real"); empty without --check
    num_layers: int | None  # --num-layers of the real-size check
    verdict: str  # "pass" | "fail" (a checked model does not build at a checked size)
