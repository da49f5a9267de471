"""Load the target's `mindiesd.compilation` from its source tree, unmodified, and run its backend with a chosen
set of pattern groups.

MindIE-SD's package `__init__` loads NPU-only shared libraries, so under emulation the loader puts stand-ins for
exactly its NPU-only files in sys.modules (`mindiesd/__init__.py`, `layers/__init__.py`, `layers/register_ops.py`;
catalogs/mindiesd_standins.toml, sdcompile.core.npu.emulation.mindiesd_standins): the two packages search the tree, so
`mindiesd.compilation`, `mindiesd.utils` and the layer files pattern replacements call (rope.py, adalayernorm.py,
muls_add.py, residual_gate_add.py, scale_shift.py, with their own torch fallbacks) import from the tree and run
unmodified. On a real NPU the real package is imported from the tree; when it cannot be, loading stops
(EnvironmentMissing) unless $SDCOMPILE_CPU_REFERENCE_OPS=1 asks for the stand-ins over the real torch_npu.

    target = load_target(tree)                  # every pattern module imported, failures recorded, never raised
    with target.session(["WanRmsNormPatternGroup"]) as s:
        compiled = torch.compile(module, backend=s.backend())
        compiled(*inputs)
        s.replacements, s.pass_log_counts, s.graphs, s.registered_patterns()

Importing the package: package_import.py; the groups it holds: pattern_groups.py; a session (what it resets,
restricts and records): compile_session.py.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable

from sdcompile.catalogs import load
from sdcompile.core.npu.device import DeviceInfo, current
from sdcompile.core.npu.emulation.ops import fused_op_table
from sdcompile.core.target.compile_session import CompileSession
from sdcompile.core.target.discovery import TargetTree
from sdcompile.core.target.package_import import (
    CORE_MODULES,
    PACKAGE,
    ModuleLoad,
    import_core,
    import_patterns,
    install_package,
    purge_package,
    quiet_target_logging,
    sources_fingerprint,
)
from sdcompile.core.target.pattern_groups import GroupLoad, compute_groups, find_group
from sdcompile.core.target.registry import GRAPH_ENTRIES, TargetRegistry, read_target_registry
from sdcompile.util.errors import EnvironmentMissing
from sdcompile.util.log import get_logger

log = get_logger(__name__)


# ------------------------------------------------------------------------------------------------ the target
class LoadedTarget:
    """The target's compilation package, imported; see the module docstring."""

    def __init__(self, tree: TargetTree, device: DeviceInfo, package: str, package_note: str,
                 registry: TargetRegistry, modules: tuple[ModuleLoad, ...]):
        self.tree = tree
        self.device = device
        self.package = package  # "stand-in" or "real"
        self.package_note = package_note
        self.registry = registry
        self.modules = modules
        self._groups: dict[str, GroupLoad] = compute_groups(tree, registry, self.pattern_modules)
        self._session_lock = threading.Lock()
        self.fingerprint: tuple = ()  # of the compilation sources as imported (see load_target)
        self.layers: tuple[ModuleLoad, ...] = ()  # the tree's layer modules imported under the stand-ins

    # -- what loaded
    @property
    def compilation_ok(self) -> bool:
        return all(m.ok for m in self.modules if not m.module.startswith(f"{PACKAGE}.compilation.patterns."))

    @property
    def pattern_modules(self) -> tuple[ModuleLoad, ...]:
        return tuple(m for m in self.modules if m.module.startswith(f"{PACKAGE}.compilation.patterns."))

    @property
    def groups(self) -> tuple[GroupLoad, ...]:
        return tuple(self._groups.values())

    def module(self, name: str):
        """A module of the loaded target's compilation package (`passes.pattern_match_pass`)."""
        return sys.modules[f"{PACKAGE}.compilation.{name}"]

    def group(self, name_or_flag: str) -> GroupLoad:
        """A group by its name (`WanRmsNormPatternGroup`, case-insensitive) or its flag (`enable_wan_rmsnorm`)."""
        return find_group(self._groups, name_or_flag, self.tree)

    def pattern_classes(self, group: str) -> list:
        """The group's PatternBase classes ([] for a GraphPatternEntry carrier: it has none)."""
        g = self.group(group)
        if g.carrier == GRAPH_ENTRIES:
            return []
        return list(getattr(self.module("patterns"), g.group))

    def registration_of(self, group: str):
        """What registers the group with a pass: its pattern classes, or a carrier's registration function
        (called with the pass's PatternMatcherPass)."""
        g = self.group(group)
        if g.carrier == GRAPH_ENTRIES:
            return getattr(self.module(f"patterns.{g.module}"), g.group)
        return self.pattern_classes(group)

    # -- what MindieSDBackend runs on the AOT graph before its pattern pass: the tree's own code
    REDUNDANT_NODE_PASS_NAME = "the target's ReduandantNodeEliminationPass"

    def redundant_node_pass(self):
        return self.module("passes.redundant_node_elimination_pass").ReduandantNodeEliminationPass()

    def decomposition_table(self) -> dict:
        return self.module("_custom_decomposition").select_custom_decomp_table()

    # -- running
    def session(self, groups: Iterable[str]) -> CompileSession:
        if _loaded is not self:
            # Upstream resolves its pattern package through sys.modules, which now holds another load.
            raise RuntimeError(f"{self.tree.root} is no longer the loaded target; call load_target() again")
        return CompileSession(self, [self.group(g) for g in groups])


# -------------------------------------------------------------------------------------------------- loading
_load_lock = threading.RLock()
_loaded: LoadedTarget | None = None


def loaded_target() -> LoadedTarget | None:
    return _loaded


def load_target(tree: TargetTree, reload: bool = False) -> LoadedTarget:
    """Import the target's compilation package and every pattern module under the active device.

    Activates the device ("auto") if nothing did yet. Cached per tree while its compilation sources are
    unchanged (an edit — scaffold, register — re-imports; `reload=True` forces it). Pattern modules that fail
    to import are recorded, never raised; a failure of the compilation core itself (backend, passes, config)
    raises EnvironmentMissing naming the module.
    """
    global _loaded
    device = current()
    with _load_lock:
        fingerprint = sources_fingerprint(tree)
        if (_loaded is not None and _loaded.tree.root == tree.root and not reload
                and _loaded.fingerprint == fingerprint):
            return _loaded
        purge_package()
        registry = read_target_registry(tree)
        with quiet_target_logging():
            package, note, layers = install_package(tree, device)
            modules = import_core(tree) + import_patterns(tree)
        _loaded = LoadedTarget(tree, device, package, note, registry, modules)
        log.info("imported %s (MindIE-SD %s) under %s: %d of %d modules", tree.root, tree.version, device.label,
                 sum(m.ok for m in modules), len(modules))
        _loaded.fingerprint = fingerprint
        _loaded.layers = layers
        failed_core = [m for m in modules[: len(CORE_MODULES)] if not m.ok]
        if failed_core:
            raise EnvironmentMissing(
                f"the target's compilation package does not import under {device.label}: "
                f"{failed_core[0].module}: {failed_core[0].error}",
                "check the tree is a MindIE-SD source tree for this torch version",
            )
        return _loaded


def emulated_fused_op_targets() -> frozenset[str]:
    """`npu.npu_rms_norm.default`-style targets of every fused op in the catalog, casts (`cast = true`) left out."""

    casts = {e["name"] for e in load("fused_ops").get("op", []) if e.get("cast")}
    return frozenset(op.target for op in fused_op_table() if op.name not in casts)
