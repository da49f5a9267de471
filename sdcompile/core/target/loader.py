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

A session resets what upstream keeps per process (the activate-once flag, the module-level PatternMatchPass,
dynamo's caches, the inductor counters), restricts `CompilationConfig.fusion_patterns` to the selection and
captures MindIE-SD's log, so runs never leak into each other.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
import importlib.machinery
import importlib.util
import logging
import os
import re
import sys
import threading
import traceback
import types
from collections import Counter
from collections.abc import Iterable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sdcompile.core.npu.device import DeviceInfo, current
from sdcompile.core.target.discovery import TargetTree
from sdcompile.core.target.registry import TargetRegistry, read_target_registry
from sdcompile.util.errors import BadInput, EnvironmentMissing

PACKAGE = "mindiesd"
LOGGER_NAME = "mindie-sd"
REPLACE_LINE = re.compile(r"PatternMatchPass replace (\d+) patterns\.")
# MindIE-SD logs to stdout and to ~/mindie/log by default; stdout is sdcompile's data channel, so the target's
# log is captured by sdcompile instead (file logging stays on only when the user asked for it).
_LOG_ENV = {"MINDIE_LOG_TO_STDOUT": "false", "MINDIE_LOG_TO_FILE": "false"}


@dataclass(frozen=True)
class ModuleLoad:
    """One module of the target, imported (or not) under this process's device."""

    module: str  # "mindiesd.compilation.patterns.rms_norm_pattern"
    ok: bool
    error: str | None = None  # "ModuleNotFoundError: ... (mindiesd/compilation/patterns/x.py:12)"


@dataclass(frozen=True)
class GroupLoad:
    position: int | None  # order in pattern_registry; None for a group exported but not registered there
    flag: str | None
    group: str
    module: str | None  # "rms_norm_pattern"
    loaded: bool
    error: str | None
    patterns: tuple[str, ...]  # PatternBase.name() of each pattern in the group


@dataclass(frozen=True)
class NodeOp:
    name: str
    op: str  # placeholder, call_function, get_attr, output
    target: str  # "aten.pow.Tensor_Scalar", "npu.npu_rms_norm.default", "getitem"


@dataclass(frozen=True)
class GraphSnapshot:
    code: str  # GraphModule.print_readable(), stable enough to diff and to show
    nodes: tuple[NodeOp, ...]

    def op_counts(self) -> Counter:
        return Counter(n.target for n in self.nodes if n.op == "call_function")


@dataclass(frozen=True)
class PassCapture:
    """The graph the pattern pass received and the graph it returned, for one compiled graph."""

    before: GraphSnapshot
    after: GraphSnapshot | None  # None when the pass raised
    error: str | None = None
    # Live objects for diagnosis, never reported: the GraphModule the pass rewrote, and a copy of its graph as
    # the pass received it (node meta shared, not copied).
    graph_module: object = dataclasses.field(default=None, compare=False, repr=False)
    before_graph: object = dataclasses.field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Application:
    """One replacement the pass applied: which pattern, at which node, from which source line."""

    pattern: str  # PatternBase.name()
    node: str  # the matched node the replacement anchored on (the pattern's output in the graph)
    target: str  # its op
    stack_trace: str  # the node's recorded source stack (model code that produced it), "" when absent
    module_path: str  # the submodule it ran in ("blocks.0.attn1.norm_q"), "" when the graph did not keep it


@dataclass(frozen=True)
class RegisteredPattern:
    name: str  # PatternBase.name()
    printed: str  # PatternPrettyPrinter output of the pattern as the matcher registered it
    anchor_targets: tuple[str, ...]  # the op(s) the matcher looks for first (the pattern's output)
    op_targets: tuple[str, ...]  # every op target the registered pattern contains


def target_name(target) -> str:
    """How a node target reads in sdcompile's reports: `aten.pow.Tensor_Scalar`, `npu.npu_rms_norm.default`."""
    if isinstance(target, str):
        return target
    text = str(target)
    if text.startswith("<"):
        return getattr(target, "__name__", text)
    return text


def snapshot(gm) -> GraphSnapshot:
    nodes = tuple(NodeOp(n.name, n.op, target_name(n.target)) for n in gm.graph.nodes)
    try:
        code = gm.print_readable(print_output=False)
    except Exception:  # noqa: BLE001 - printing is best effort; the node list is the evidence
        code = str(gm.graph)
    return GraphSnapshot(code, nodes)


def _root_cause(exc: BaseException) -> BaseException:
    """torch.compile wraps a backend's exception (BackendCompilerFailed): the user needs the one inside."""
    seen = set()
    while id(exc) not in seen:
        seen.add(id(exc))
        inner = getattr(exc, "inner_exception", None) or exc.__cause__
        if not isinstance(inner, BaseException):
            break
        exc = inner
    return exc


def describe_error(exc: BaseException, tree_root: Path | None = None) -> str:
    """One line: the root exception and the deepest frame inside the target tree (where the user should look)."""
    exc = _root_cause(exc)
    where = ""
    if tree_root is not None:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if str(tree_root) in f.filename]
        if frames:
            f = frames[-1]
            where = f" ({Path(f.filename).relative_to(tree_root)}:{f.lineno})"
    lines = [ln for ln in str(exc).strip().splitlines() if ln.strip()]
    text = lines[0].strip() if lines else ""
    return f"{type(exc).__name__}: {text}{where}"


# ----------------------------------------------------------------------------------------- the stand-in package
# On an NPU host whose mindiesd package does not import, the run stops unless the user asks for this.
ENV_REFERENCE_OPS = "SDCOMPILE_CPU_REFERENCE_OPS"


def _standin_package(tree: TargetTree) -> tuple[dict[str, types.ModuleType], tuple[ModuleLoad, ...]]:
    """The stand-ins for the package's NPU-only files, in sys.modules, and the tree's layer modules imported under
    them (each recorded; a failure is reported by the patterns that need it, never raised here)."""
    from sdcompile.core.npu.emulation import mindiesd_standins

    modules = mindiesd_standins.build(tree.package)
    sys.modules.update(modules)
    layers = tuple(_import(name, tree) for name in mindiesd_standins.tree_layer_modules())
    mindiesd_standins.bind_exports(modules)
    return modules, layers


def _standin_note(tree: TargetTree) -> str:
    from sdcompile.core.npu.emulation import mindiesd_standins

    files = ", ".join(s.file for s in mindiesd_standins.standin_catalog())
    layers = ", ".join(m.rsplit(".", 1)[-1] + ".py" for m in mindiesd_standins.tree_layer_modules())
    return (f"{PACKAGE} from {tree.package}: compilation/, utils/ and layers/ ({layers}) run from the tree; "
            f"sdcompile stand-ins for the NPU-only {files} (catalogs/{mindiesd_standins.CATALOG}.toml)")


def _purge_package() -> None:
    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
        del sys.modules[name]
    importlib.invalidate_caches()


@contextmanager
def _quiet_target_logging():
    saved = {k: os.environ.get(k) for k in _LOG_ENV}
    os.environ["MINDIE_LOG_TO_STDOUT"] = "false"
    if saved["MINDIE_LOG_TO_FILE"] is None:
        os.environ["MINDIE_LOG_TO_FILE"] = "false"
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


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
        self._groups: dict[str, GroupLoad] = {}
        self._session_lock = threading.Lock()
        self.fingerprint: tuple = ()  # of the compilation sources as imported (see load_target)
        self.layers: tuple[ModuleLoad, ...] = ()  # the tree's layer modules imported under the stand-ins
        self._compute_groups()

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

    def _module(self, name: str):
        return sys.modules[f"{PACKAGE}.compilation.{name}"]

    def _compute_groups(self) -> None:
        patterns_pkg = sys.modules.get(f"{PACKAGE}.compilation.patterns")
        failed = {m.module.rsplit(".", 1)[-1]: m.error for m in self.pattern_modules if not m.ok}
        registered = {g.group: g for g in self.registry.groups}
        names = list(registered) + [e.group for e in self.registry.exports if e.group not in registered]
        for name in names:
            reg = registered.get(name)
            export = next((e for e in self.registry.exports if e.group == name), None)
            source = (reg.source_module if reg else export.source_module if export else None) or ""
            module = source.lstrip(".") or None
            group = getattr(patterns_pkg, name, None) if patterns_pkg is not None else None
            error = None
            if group is None:
                error = failed.get(module or "") or (
                    f"{name} is not exported by mindiesd/compilation/patterns/__init__.py" if patterns_pkg
                    else "mindiesd.compilation.patterns did not import"
                )
            pattern_names: tuple[str, ...] = ()
            if group is not None:
                try:
                    pattern_names = tuple(p.name() for p in group)
                except Exception as exc:  # noqa: BLE001 - a broken group is reported, not raised
                    error = describe_error(exc, self.tree.root)
            self._groups[name] = GroupLoad(
                position=reg.position if reg else None, flag=reg.flag if reg else None, group=name,
                module=module, loaded=group is not None and error is None, error=error, patterns=pattern_names,
            )

    def group(self, name_or_flag: str) -> GroupLoad:
        """A group by its name (`WanRmsNormPatternGroup`, case-insensitive) or its flag (`enable_wan_rmsnorm`)."""
        wanted = name_or_flag.lower()
        for g in self._groups.values():
            if g.group.lower() == wanted or (g.flag or "").lower() == wanted:
                return g
        known = ", ".join(g.group for g in self._groups.values())
        raise BadInput(f"no pattern group {name_or_flag!r} in {self.tree.root}", f"known groups: {known}")

    def pattern_classes(self, group: str) -> list:
        return list(getattr(self._module("patterns"), self.group(group).group))

    # -- what MindieSDBackend runs on the AOT graph before its pattern pass: the tree's own code
    REDUNDANT_NODE_PASS_NAME = "the target's ReduandantNodeEliminationPass"

    def redundant_node_pass(self):
        return self._module("passes.redundant_node_elimination_pass").ReduandantNodeEliminationPass()

    def decomposition_table(self) -> dict:
        return self._module("_custom_decomposition").select_custom_decomp_table()

    # -- running
    def session(self, groups: Iterable[str]) -> CompileSession:
        if _loaded is not self:
            # Upstream resolves its pattern package through sys.modules, which now holds another load.
            raise RuntimeError(f"{self.tree.root} is no longer the loaded target; call load_target() again")
        return CompileSession(self, [self.group(g) for g in groups])


class CompileSession:
    """One compile run with only `groups` enabled (a context manager; see the module docstring)."""

    def __init__(self, target: LoadedTarget, groups: list[GroupLoad]):
        self.target = target
        self.groups = groups
        self.graphs: list[PassCapture] = []
        # The graph each compile ends with, after freeze() and graph_rewrite_after_freezing (custom graph passes
        # included): what actually runs.
        self.final_graphs: list[GraphSnapshot] = []
        self.log: list[logging.LogRecord] = []
        self.registration_errors: dict[str, str] = {}  # pattern name -> error
        self.hits_by_pattern: Counter = Counter()  # pattern name -> replacements it applied in this session
        self.applications: list[Application] = []
        self._entries_by_pattern: dict[str, list] = {}
        self._saved_config = None
        self._handler: logging.Handler | None = None
        self._logger_state = None

    # -- lifecycle
    def __enter__(self) -> CompileSession:
        if not self.target._session_lock.acquire(blocking=False):
            raise RuntimeError("another CompileSession on this target is still open")
        try:
            reset_compile_state(self.target)
            self._restrict_config()
            self._attach_log()
            self._observe_registration()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc_info) -> None:
        try:
            rpp = self.target._module("passes.register_pattern_to_pass")
            rpp.patterns.__dict__.pop("register_pattern", None)
            if self._saved_config is not None:
                self.target._module("compiliation_config").CompilationConfig.fusion_patterns = self._saved_config
                self._saved_config = None
            self._detach_log()
        finally:
            if self.target._session_lock.locked():
                self.target._session_lock.release()

    def _restrict_config(self) -> None:
        config_module = self.target._module("compiliation_config")
        fusion = config_module.FusionPatterns
        selected = {g.flag for g in self.groups if g.flag}
        self._saved_config = config_module.CompilationConfig.fusion_patterns
        values = {f.name: f.name in selected for f in dataclasses.fields(fusion)}
        config_module.CompilationConfig.fusion_patterns = fusion(**values)

    def _attach_log(self) -> None:
        logger = logging.getLogger(LOGGER_NAME)
        session = self

        class _Capture(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                session.log.append(record)

        self._logger_state = (logger.level, logger.disabled)
        self._handler = _Capture(level=logging.DEBUG)
        logger.addHandler(self._handler)
        logger.setLevel(logging.DEBUG)  # the replace count is logged at DEBUG
        logger.disabled = False

    def _detach_log(self) -> None:
        logger = logging.getLogger(LOGGER_NAME)
        if self._handler is not None:
            logger.removeHandler(self._handler)
            self._handler = None
        if self._logger_state is not None:
            logger.setLevel(self._logger_state[0])
            logger.disabled = self._logger_state[1]
            self._logger_state = None

    def _observe_registration(self) -> None:
        """Attribute each registered pattern entry to the PatternBase.name() that produced it."""
        patterns = self.target._module("passes.register_pattern_to_pass").patterns
        original = type(patterns).register_pattern
        session = self

        def register_pattern(name, pattern, replacement, example_inputs):
            before = {id(e) for entries in patterns.pattern_pass.patterns.values() for e in entries}
            try:
                return original(patterns, name, pattern, replacement, example_inputs)
            except Exception as exc:
                session.registration_errors[name] = describe_error(exc, session.target.tree.root)
                raise
            finally:
                added = [e for entries in patterns.pattern_pass.patterns.values() for e in entries
                         if id(e) not in before]
                session._entries_by_pattern[name] = added
                for entry in added:
                    session._count_applications(entry, name)

        patterns.register_pattern = register_pattern  # an instance attribute; removed again on exit

    def _count_applications(self, entry, name: str) -> None:
        """Count which pattern applied each replacement (inductor's counter only has the total)."""
        original = entry.apply
        hits, applications = self.hits_by_pattern, self.applications

        def apply(match, graph, node, *args, **kwargs):
            hits[name] += 1
            meta = getattr(node, "meta", {})
            applications.append(Application(name, getattr(node, "name", str(node)),
                                            target_name(getattr(node, "target", "")),
                                            str(meta.get("stack_trace") or ""), _module_path(meta)))
            return original(match, graph, node, *args, **kwargs)

        entry.apply = apply

    # -- what to compile with
    def activate(self) -> None:
        """Register the selected groups now (the backend would do it on first compile). Raises what upstream
        raises; unregistered-but-exported groups are registered directly after the registry's own."""
        passes = self.target._module("passes")
        passes.activate_pattern_once()
        rpp = self.target._module("passes.register_pattern_to_pass")
        for g in self.groups:
            if g.flag is None and not self._registered_any(g):
                rpp.register_pattern_to_pass(getattr(self.target._module("patterns"), g.group))

    def _registered_any(self, group: GroupLoad) -> bool:
        return any(name in self._entries_by_pattern for name in group.patterns)

    def backend(self):
        """A MindieSDBackend (the target's own class) that also records the graphs around its pattern pass."""
        base = self.target._module("mindie_sd_backend").MindieSDBackend
        sink, finals = self.graphs, self.final_graphs
        session = self

        class ObservedMindieSDBackend(base):
            @classmethod
            def apply_pattern_match_passes(cls, graph, inputs):
                before, before_graph = snapshot(graph), copy.deepcopy(graph.graph)
                try:
                    session.activate()  # upstream's activation, plus groups not in pattern_registry
                    super().apply_pattern_match_passes(graph, inputs)
                except Exception as exc:
                    sink.append(PassCapture(before, None, describe_error(exc, session.target.tree.root), graph,
                                            before_graph))
                    raise
                sink.append(PassCapture(before, snapshot(graph), None, graph, before_graph))

            @classmethod
            def apply_decompose_auto_functionalized_pass(cls, graph):
                super().apply_decompose_auto_functionalized_pass(graph)
                # graph_rewrite_after_freezing's last rewrite: from here on the graph is the one that runs
                finals.append(snapshot(graph))

        return ObservedMindieSDBackend()

    # -- what happened
    @property
    def replacements(self) -> int:
        """Inductor's own counter of applied replacements (every pass application in this session)."""
        from sdcompile.core.torchcompat.dynamo import counters

        return int(counters()["inductor"]["pattern_matcher_count"])

    @property
    def pass_log_counts(self) -> list[int]:
        """The N of each "PatternMatchPass replace N patterns." line MindIE-SD logged in this session."""
        counts = []
        for record in self.log:
            match = REPLACE_LINE.search(record.getMessage())
            if match:
                counts.append(int(match.group(1)))
        return counts

    def warnings(self) -> list[str]:
        return [r.getMessage().splitlines()[0] for r in self.log if r.levelno >= logging.WARNING]

    def pattern_entries(self) -> dict[str, list]:
        """pattern name -> the PatternEntry objects the matcher registered for it."""
        return {k: list(v) for k, v in self._entries_by_pattern.items()}

    def registered_patterns(self) -> list[RegisteredPattern]:
        from sdcompile.core.torchcompat.pattern_matcher import pretty

        found = []
        for name, entries in self._entries_by_pattern.items():
            for entry in entries:
                try:
                    printed = pretty(entry.pattern)
                except Exception as exc:  # noqa: BLE001 - printer gaps must not hide the rest
                    printed = f"<PatternPrettyPrinter failed: {exc}>"
                found.append(RegisteredPattern(
                    name=name, printed=printed, anchor_targets=pattern_anchor_targets(entry.pattern),
                    op_targets=tuple(sorted(pattern_op_targets(entry.pattern))),
                ))
        return found


def _module_path(meta: dict) -> str:
    stack = meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    from sdcompile.core.graph.nodes import fqn_from_source_path

    # dynamo's spelling differs by torch (2.13: L['self'].__dict__['_modules']['blocks'][0]; 2.9:
    # L['self']._modules['blocks']._modules['0']): one reader for all of them
    return fqn_from_source_path(str(list(stack.values())[-1][0]))


def _fns(expr) -> tuple:
    fns = getattr(expr, "fns", None)
    return tuple(fns) if fns else ()


def pattern_anchor_targets(expr) -> tuple[str, ...]:
    outputs = getattr(expr, "outputs", None)
    if outputs is not None:  # MultiOutputPattern: the first output anchors the search
        return tuple(target_name(f) for o in outputs[:1] if o is not None for f in _fns(o))
    return tuple(target_name(f) for f in _fns(expr))


def pattern_op_targets(expr, seen: set | None = None) -> set[str]:
    """Every op target inside a registered PatternExpr tree."""
    from sdcompile.core.torchcompat.pattern_matcher import pattern_expr_type

    PatternExpr = pattern_expr_type()  # noqa: N806 - the class, named as torch names it

    seen = set() if seen is None else seen
    if id(expr) in seen:
        return set()
    seen.add(id(expr))
    found = {target_name(f) for f in _fns(expr)}
    children = list(getattr(expr, "outputs", None) or [])
    for attr in ("args", "kwargs"):
        value = getattr(expr, attr, None)
        if isinstance(value, dict):
            children.extend(value.values())
        elif isinstance(value, (list, tuple)):
            children.extend(value)
    stack = list(children)
    while stack:
        child = stack.pop()
        if isinstance(child, PatternExpr):
            found |= pattern_op_targets(child, seen)
        elif isinstance(child, (list, tuple)):
            stack.extend(child)
    return found


def reset_compile_state(target: LoadedTarget) -> None:
    """Forget every pattern registration and compiled graph of earlier runs in this process."""
    from sdcompile.core.torchcompat import dynamo

    target._module("passes").once_flag.clear()
    # mindie_sd_backend imported `patterns` by name, so the object is reset in place, never replaced.
    target._module("passes.register_pattern_to_pass").patterns.__init__()
    dynamo.reset()
    dynamo.counters().clear()


# -------------------------------------------------------------------------------------------------- loading
_load_lock = threading.RLock()
_loaded: LoadedTarget | None = None

_CORE_MODULES = (
    "compilation",
    "compilation.compiliation_config",
    "compilation.passes",
    "compilation.passes.register_pattern_to_pass",
    "compilation.mindie_sd_backend",
)


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
        fingerprint = _sources_fingerprint(tree)
        if (_loaded is not None and _loaded.tree.root == tree.root and not reload
                and _loaded.fingerprint == fingerprint):
            return _loaded
        _purge_package()
        registry = read_target_registry(tree)
        with _quiet_target_logging():
            package, note, layers = _install_package(tree, device)
            modules = _import_core(tree) + _import_patterns(tree)
        _loaded = LoadedTarget(tree, device, package, note, registry, modules)
        _loaded.fingerprint = fingerprint
        _loaded.layers = layers
        failed_core = [m for m in modules[: len(_CORE_MODULES)] if not m.ok]
        if failed_core:
            raise EnvironmentMissing(
                f"the target's compilation package does not import under {device.label}: "
                f"{failed_core[0].module}: {failed_core[0].error}",
                "check the tree is a MindIE-SD source tree for this torch version",
            )
        return _loaded


def _sources_fingerprint(tree: TargetTree) -> tuple:
    """Size and mtime of every source file of the compilation package: a change means re-import."""
    found = []
    for path in sorted(tree.compilation.rglob("*.py")):
        try:
            st = path.stat()
        except OSError:
            continue
        found.append((str(path), st.st_size, st.st_mtime_ns))
    return tuple(found)


def _install_package(tree: TargetTree, device: DeviceInfo) -> tuple[str, str, tuple[ModuleLoad, ...]]:
    """("real" | "stand-in", how, the tree's layer modules imported under the stand-ins)."""
    if device.is_real:
        root = str(tree.root)
        if sys.path[:1] != [root]:
            sys.path.insert(0, root)
        try:
            module = importlib.import_module(PACKAGE)
            origin = Path(module.__file__ or "").resolve()
            if not origin.is_relative_to(tree.package.resolve()):
                raise ImportError(f"`import {PACKAGE}` resolved to {origin}, not the target tree")
            return "real", f"the real {PACKAGE} package from {tree.package}", ()
        except Exception as exc:  # noqa: BLE001 - stop, or the CPU reference ops when asked for
            _purge_package()
            why = describe_error(exc, tree.root)
            if os.environ.get(ENV_REFERENCE_OPS, "") != "1":
                raise EnvironmentMissing(
                    f"this NPU host cannot import the target's {PACKAGE} package from {tree.package}: {why}",
                    f"fix the MindIE-SD install for this torch/torch_npu (its layers and plugin library), or set "
                    f"{ENV_REFERENCE_OPS}=1 to run the tree's layers with sdcompile's CPU reference ops for its "
                    "NPU-only parts",
                ) from exc
            from sdcompile.core.npu.emulation.ops import register_ops

            register_ops(("mindiesd",), skip_existing=True)  # the plugin library's ops, as CPU reference kernels
            note = (f"the real {PACKAGE} package failed to import ({why}); {ENV_REFERENCE_OPS}=1: "
                    f"{_standin_note(tree)}, over the real torch_npu")
    else:
        note = _standin_note(tree)
    _, layers = _standin_package(tree)
    return "stand-in", note, layers


def _import(name: str, tree: TargetTree) -> ModuleLoad:
    try:
        importlib.import_module(name)
        return ModuleLoad(name, True)
    except Exception as exc:  # noqa: BLE001 - recorded per module; the caller decides what is fatal
        return ModuleLoad(name, False, describe_error(exc, tree.root))


def _import_core(tree: TargetTree) -> tuple[ModuleLoad, ...]:
    return tuple(_import(f"{PACKAGE}.{m}", tree) for m in _CORE_MODULES)


def _import_patterns(tree: TargetTree) -> tuple[ModuleLoad, ...]:
    """Each pattern module on its own, so one broken module does not hide the other fifteen.

    The package `__init__` imports every module; when it fails, the package object is created without it
    and the groups of the modules that do import are bound on it, as the `__init__` would have.
    """
    package_name = f"{PACKAGE}.compilation.patterns"
    files = sorted(p.stem for p in tree.patterns_dir.glob("*.py") if p.stem != "__init__")
    package_load = _import(package_name, tree)
    if not package_load.ok:
        sys.modules.pop(package_name, None)
        spec = importlib.machinery.PathFinder.find_spec(package_name, [str(tree.compilation)])
        package = importlib.util.module_from_spec(spec)  # not executed: its __init__ is what failed
        sys.modules[package_name] = package
        sys.modules[f"{PACKAGE}.compilation"].patterns = package
    loads = [_import(f"{package_name}.{stem}", tree) for stem in files]
    if not package_load.ok:
        from sdcompile.core.target.registry import read_exports

        package = sys.modules[package_name]
        for export in read_exports(tree.patterns_init):
            source = sys.modules.get(f"{package_name}{export.source_module}") if export.source_module else None
            if source is not None and hasattr(source, export.group):
                setattr(package, export.group, getattr(source, export.group))
    return (package_load, *loads)


def emulated_fused_op_targets() -> frozenset[str]:
    """`npu.npu_rms_norm.default`-style targets of every fused op in the catalog, casts (`cast = true`) left out."""
    from sdcompile.catalogs import load
    from sdcompile.core.npu.emulation.ops import fused_op_table

    casts = {e["name"] for e in load("fused_ops").get("op", []) if e.get("cast")}
    return frozenset(op.target for op in fused_op_table() if op.name not in casts)


__all__ = [
    "Application", "CompileSession", "GraphSnapshot", "GroupLoad", "LoadedTarget", "ModuleLoad", "NodeOp",
    "PassCapture", "RegisteredPattern", "describe_error", "emulated_fused_op_targets", "load_target", "loaded_target",
    "pattern_anchor_targets", "pattern_op_targets", "reset_compile_state", "snapshot", "target_name",
]
