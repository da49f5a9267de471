"""What `sdcompile backends` returns: a row per backend, the probes behind them and the stand-ins."""

from __future__ import annotations

from dataclasses import dataclass

from sdcompile.core.environment import Versions
from sdcompile.core.npu.probe import Probe


@dataclass(frozen=True)
class BackendRow:
    name: str
    title: str
    entry_point: str
    aot_functionalization: str
    mindie_patterns: str
    capture: str
    copy_behaviour: str
    available: str  # "yes", "emulated" (runs on CPU under sdcompile's emulated NPU) or "no"
    reason: str


@dataclass(frozen=True)
class StandinRow:
    """A file of the target's mindiesd package that sdcompile stands in for (catalogs/mindiesd_standins.toml)."""

    module: str
    file: str
    why: str
    serves: str


@dataclass(frozen=True)
class BackendsReport:
    device: str  # what this machine offers: "npu" or "cpu (emulated npu)"
    probes: tuple[Probe, ...]
    backends: tuple[BackendRow, ...]
    note: str
    standins: tuple[StandinRow, ...]  # what the default backend runs instead of the target's NPU-only files
    standins_note: str  # when they are used
    versions: Versions | None = None  # torch, torch_npu (real or emulated, with its behaviours), diffusers
