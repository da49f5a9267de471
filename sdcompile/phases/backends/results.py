"""What `sdcompile backends` returns: a row per backend, the probes behind them and the stand-ins."""

from __future__ import annotations

from dataclasses import dataclass

from sdcompile.core.environment import Versions
from sdcompile.core.npu.probe import Probe


@dataclass(frozen=True)
class ConfigMode:
    """A CompilationConfig setting that selects a mode, as a pasteable line."""

    field: str
    line: str  # "CompilationConfig.aclgraph_with_compile = True"
    meaning: str


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
    # "mindiesd", or "outside": a torch.compile backend with which MindIE-SD's fusions are lost
    provider: str = "mindiesd"
    offered: bool = True  # the target's CompilationConfig declares the row's fields (always, for "outside" rows)
    missing: tuple[str, ...] = ()  # the CompilationConfig fields the target lacks
    modes: tuple[ConfigMode, ...] = ()  # the CompilationConfig settings the target declares for this row


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
    config_source: str = ""  # where the CompilationConfig fields were read (the tree's file or the documented ones)
    config_from_tree: bool = False
    config_problem: str = ""  # why a found tree's fields were not read
