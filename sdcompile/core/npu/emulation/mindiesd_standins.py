"""Stand-ins for the NPU-only files of the target's `mindiesd` package (catalogs/mindiesd_standins.toml).

MindIE-SD's `mindiesd/__init__.py` and `mindiesd/layers/__init__.py` import modules that load NPU-only shared
libraries, and `layers/register_ops.py` loads its compiled operator library as soon as it sees an NPU. So when the
package cannot be imported whole, the loader (`sdcompile.core.target.loader`) puts these stand-ins in `sys.modules`
instead of exactly those three files; every other module — compilation/, utils/, the pure-Python layer files —
is imported from the tree and runs unmodified. The two package stand-ins search the tree's folders, and after the
tree's layer modules are imported they export the functions the tree's own `__init__` files would.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import types
from dataclasses import dataclass
from pathlib import Path

from sdcompile.catalogs import load

CATALOG = "mindiesd_standins"


@dataclass(frozen=True)
class Standin:
    module: str  # "mindiesd.layers"
    file: str  # "mindiesd/layers/__init__.py": the tree's file it stands in for, never executed
    package: bool
    why: str
    serves: str
    exports: tuple[tuple[str, str], ...]  # (attribute, "mindiesd.layers.rope:rotary_position_embedding")


@dataclass(frozen=True)
class ExportFailure:
    standin: str
    attribute: str
    error: str


def standin_catalog() -> tuple[Standin, ...]:
    return tuple(
        Standin(module=e["module"], file=e["file"], package=bool(e["package"]), why=e["why"], serves=e["serves"],
                exports=tuple(sorted(e.get("exports", {}).items())))
        for e in load(CATALOG)["standin"]
    )


def tree_layer_modules() -> tuple[str, ...]:
    """The tree's layer modules the stand-ins export from, imported up front so a failure is reported by name."""
    return tuple(sorted({source.split(":", 1)[0] for s in standin_catalog() for _, source in s.exports}
                        | {"mindiesd.layers.scale_shift"}))


# ------------------------------------------------------------------------------- what register_ops serves
def _check_mindie_operator_exists(op_name: str) -> bool:
    import torch

    return hasattr(torch.ops.mindiesd, op_name)


def _register_mindie_fake_op(op_name: str):
    """A pass-through: the emulated ops carry their own fake kernels (ops.py), as the real library's would."""
    def keep(fn):
        return fn

    return keep


_SERVED: dict[str, dict[str, object]] = {
    "mindiesd.layers.register_ops": {
        "MINDIE_NS": "mindiesd",
        "check_mindie_operator_exists": _check_mindie_operator_exists,
        "register_mindie_fake_op": _register_mindie_fake_op,
    },
}


def build(package_dir: Path) -> dict[str, types.ModuleType]:
    """The stand-in modules for the tree whose `mindiesd/` folder is `package_dir`, keyed by module name."""
    modules: dict[str, types.ModuleType] = {}
    for standin in standin_catalog():
        relative = standin.module.split(".")[1:]
        module = types.ModuleType(standin.module, f"sdcompile stand-in for {standin.file}: {standin.serves}")
        spec = importlib.machinery.ModuleSpec(standin.module, loader=None, is_package=standin.package)
        if standin.package:  # submodules (compilation/, utils/, layers/*.py) import from the tree
            spec.submodule_search_locations = [str(package_dir.joinpath(*relative))]
            module.__path__ = list(spec.submodule_search_locations)
        module.__spec__ = spec
        module.__package__ = standin.module if standin.package else standin.module.rpartition(".")[0]
        module.__file__ = None
        module.sdcompile_standin = standin
        module.sdcompile_export_failures = {}  # attribute -> why the tree's module did not give it (bind_exports)
        for name, value in _SERVED.get(standin.module, {}).items():
            setattr(module, name, value)
        module.__getattr__ = _missing(standin, module)
        modules[standin.module] = module
    for name, module in modules.items():  # link children to parents as the import system would
        parent, _, child = name.rpartition(".")
        if parent in modules:
            setattr(modules[parent], child, module)
    return modules


def _missing(standin: Standin, module: types.ModuleType):
    def __getattr__(name: str):
        failed = module.__dict__["sdcompile_export_failures"].get(name)  # not getattr: that would recurse
        if failed:
            raise AttributeError(f"{standin.module}.{name}: the tree's module failed to import ({failed})")
        raise AttributeError(
            f"{standin.module}.{name} is not served by sdcompile's stand-in package for {standin.file} "
            f"(it exports what the compile patterns call; {standin.why})"
        )

    return __getattr__


def bind_exports(modules: dict[str, types.ModuleType]) -> tuple[ExportFailure, ...]:
    """Bind each stand-in's exports from the tree's modules (imported now); failures are returned, never raised."""
    failures = []
    for standin in standin_catalog():
        module = modules[standin.module]
        for attribute, source in standin.exports:
            module_name, _, name = source.partition(":")
            try:
                setattr(module, attribute, getattr(importlib.import_module(module_name), name))
            except Exception as exc:  # noqa: BLE001 - reported by the loader, with the tree's file
                error = f"{type(exc).__name__}: {exc}".splitlines()[0]
                module.sdcompile_export_failures[attribute] = error
                failures.append(ExportFailure(standin.module, attribute, error))
    return tuple(failures)
