"""Importing the target's `mindiesd` package from its tree: the real package on an NPU, else stand-ins for its
NPU-only files (catalogs/mindiesd_standins.toml) with the tree's compilation/, utils/ and layer files under them;
then the compilation core and each pattern module on its own, every import recorded."""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import sys
import types
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sdcompile.core.npu.device import DeviceInfo
from sdcompile.core.npu.emulation import mindiesd_standins, tree_ops, triton_runtime
from sdcompile.core.npu.emulation.ops import fused_op_table
from sdcompile.core.target.discovery import TargetTree
from sdcompile.core.target.failures import describe_error
from sdcompile.util.errors import EnvironmentMissing

PACKAGE = "mindiesd"
# MindIE-SD logs to stdout and to ~/mindie/log by default; stdout is sdcompile's data channel, so the target's
# log is captured by sdcompile instead (file logging stays on only when the user asked for it).
_LOG_ENV = {"MINDIE_LOG_TO_STDOUT": "false", "MINDIE_LOG_TO_FILE": "false"}
# On an NPU host whose mindiesd package does not import, the run stops unless the user asks for this.
ENV_REFERENCE_OPS = "SDCOMPILE_CPU_REFERENCE_OPS"

# The compilation package's own modules: a failure of any of them stops loading (pattern modules do not).
CORE_MODULES = (
    "compilation",
    "compilation.compiliation_config",
    "compilation.passes",
    "compilation.passes.register_pattern_to_pass",
    "compilation.mindie_sd_backend",
)


@dataclass(frozen=True)
class ModuleLoad:
    """One module of the target, imported (or not) under this process's device."""

    module: str  # "mindiesd.compilation.patterns.rms_norm_pattern"
    ok: bool
    error: str | None = None  # "ModuleNotFoundError: ... (mindiesd/compilation/patterns/x.py:12)"


# ----------------------------------------------------------------------------------------- the stand-in package
def _standin_package(tree: TargetTree) -> tuple[dict[str, types.ModuleType], tuple[ModuleLoad, ...]]:
    """The stand-ins for the package's NPU-only files, in sys.modules, and the tree's layer modules imported under
    them (each recorded; a failure is reported by the patterns that need it, never raised here)."""

    modules = mindiesd_standins.build(tree.package)
    sys.modules.update(modules)
    layers = tuple(_import(name, tree) for name in mindiesd_standins.tree_layer_modules())
    mindiesd_standins.bind_exports(modules)
    _guard_npu_kernels()
    return modules, layers


def _guard_npu_kernels() -> None:
    """The tree's Python fused ops, when their Triton kernels run under the interpreter (triton_runtime.py)."""

    runtime = triton_runtime.status()
    if runtime is not None and runtime.runs_npu_kernels:
        ops = [op for op in fused_op_table() if op.tree_module in sys.modules and op.npu_branch]
        tree_ops.guard_tree_ops(ops)


def _standin_note(tree: TargetTree) -> str:
    files = ", ".join(s.file for s in mindiesd_standins.standin_catalog())
    layers = ", ".join(m.rsplit(".", 1)[-1] + ".py" for m in mindiesd_standins.tree_layer_modules())
    return (f"{PACKAGE} from {tree.package}: compilation/, utils/ and layers/ ({layers}) run from the tree; "
            f"sdcompile stand-ins for the NPU-only {files} (catalogs/{mindiesd_standins.CATALOG}.toml)")


def purge_package() -> None:
    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
        del sys.modules[name]
    importlib.invalidate_caches()


@contextmanager
def quiet_target_logging():
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


# ------------------------------------------------------------------------------------------------ importing
def sources_fingerprint(tree: TargetTree) -> tuple:
    """Size and mtime of every source file of the compilation package: a change means re-import."""
    found = []
    for path in sorted(tree.compilation.rglob("*.py")):
        try:
            st = path.stat()
        except OSError:
            continue
        found.append((str(path), st.st_size, st.st_mtime_ns))
    return tuple(found)


def install_package(tree: TargetTree, device: DeviceInfo) -> tuple[str, str, tuple[ModuleLoad, ...]]:
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
            purge_package()
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


def import_core(tree: TargetTree) -> tuple[ModuleLoad, ...]:
    return tuple(_import(f"{PACKAGE}.{m}", tree) for m in CORE_MODULES)


def import_patterns(tree: TargetTree) -> tuple[ModuleLoad, ...]:
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
