"""Imports sit at the top of a module unless something needs them lazy, and that something is one of three:

- the module is loaded when a command starts (its module and options are built before it runs: `sdcompile
  status` imports nothing it does not need), or it is a command module of `sdcompile/cli/`, which loads its phase
  only when the command runs;
- the import loads a heavy library at import time (torch, diffusers, LibCST, Jinja2, numpy, ...), directly or
  through the sdcompile modules it imports: a command that does not need it does not pay for it;
- the order matters: the device (`core/npu`) is chosen before anything imports diffusers, torch internals
  (`core/torchcompat`) are probed when asked, and the pytest plugin loads before the tests' own imports.

So a function-level `from sdcompile... import` of a light module, anywhere else, is a lazy import nothing needs.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from test_layers import module_files

PACKAGE = Path(__file__).resolve().parents[1] / "sdcompile"
HEAVY = {"torch", "diffusers", "libcst", "jinja2", "numpy", "pandas", "pyarrow", "transformers", "triton",
         "torch_npu", "torchair"}
ORDER_MATTERS = ("sdcompile.cli", "sdcompile.core.npu", "sdcompile.core.torchcompat",
                 "sdcompile.testing.pytest_plugin", "sdcompile.rendering.output", "sdcompile.workspace.store")


def _top_level_imports(tree: ast.Module, resolve) -> tuple[set[str], set[str]]:
    """(sdcompile modules, other top-level packages) a module imports when it is imported."""
    own, libraries = set(), set()
    for stmt in tree.body:
        for node in stmt.body if isinstance(stmt, ast.Try) else [stmt]:
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if node.module.split(".")[0] == "sdcompile":
                    own |= {resolve(f"{node.module}.{a.name}") for a in node.names}
                else:
                    libraries.add(node.module.split(".")[0])
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "sdcompile":
                        own.add(resolve(alias.name))
                    else:
                        libraries.add(alias.name.split(".")[0])
    return own - {None}, libraries


def heavy_modules(files: dict[str, Path]) -> set[str]:
    """The sdcompile modules whose import loads a heavy library, directly or through other sdcompile modules (a
    module's parent packages are imported with it)."""

    def resolve(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    deps, libraries = {}, {}
    for module, path in files.items():
        own, libs = _top_level_imports(ast.parse(path.read_text(encoding="utf-8")), resolve)
        parts = module.split(".")
        deps[module] = (own | {".".join(parts[:i]) for i in range(1, len(parts))}) - {module}
        libraries[module] = libs
    heavy: dict[str, bool] = {}

    def is_heavy(module: str, seen: frozenset = frozenset()) -> bool:
        if module not in heavy:
            heavy[module] = bool(libraries[module] & HEAVY) or any(
                is_heavy(d, seen | {module}) for d in deps[module] if d in files and d not in seen)
        return heavy[module]

    return {m for m in files if is_heavy(m)}


def lazy_imports_nothing_needs(files: dict[str, Path], heavy: set[str], startup: set[str],
                               root: Path = PACKAGE.parent) -> list[str]:
    def resolve(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    found = []
    for module, path in files.items():
        if module in startup or module.startswith(ORDER_MATTERS):
            continue
        for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in function.body:
                if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith(
                        "sdcompile."):
                    targets = {resolve(f"{node.module}.{a.name}") for a in node.names} - {None}
                    if not targets & heavy:
                        found.append(f"{path.relative_to(root)}:{node.lineno} from {node.module} import "
                                     f"{', '.join(a.name for a in node.names)}")
    return found


def startup_modules() -> set[str]:
    """What loads before a command runs: the app, and a command's module with its options (each command is built
    when it is invoked; building all of them loads every module any command's start-up loads)."""
    code = ("import sys\nfrom sdcompile.cli.app import COMMANDS, build_command\n"
            "for entry in COMMANDS:\n    build_command(entry)\n"
            "print(' '.join(m for m in sys.modules if m.startswith('sdcompile')))")
    return set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split())


def test_a_function_level_import_of_sdcompile_has_a_reason():
    files = module_files(PACKAGE)
    found = lazy_imports_nothing_needs(files, heavy_modules(files), startup_modules())
    assert found == [], "imports at the top, unless start-up, a heavy library or the order needs them lazy:\n" + \
        "\n".join(found)


def test_the_rule_sees_a_lazy_light_import_and_spares_a_heavy_one(tmp_path):
    package = tmp_path / "sdcompile"
    (package / "core").mkdir(parents=True)
    sources = {"__init__.py": "", "core/__init__.py": "", "core/light.py": "X = 1\n",
               "core/heavy.py": "import torch\n",
               "core/user.py": ("def f():\n    from sdcompile.core.light import X\n"
                                "    from sdcompile.core.heavy import Y\n")}
    for name, text in sources.items():
        (package / name).write_text(text)
    files = module_files(package)
    assert heavy_modules(files) == {"sdcompile.core.heavy"}
    assert lazy_imports_nothing_needs(files, {"sdcompile.core.heavy"}, set(), root=tmp_path) == [
        "sdcompile/core/user.py:2 from sdcompile.core.light import X"]
