"""The import contract of tests/layers.toml: no module imports a layer above its own, no import cycle, a renderer
reads only its own phase's results, and no module is over the size limit."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = tomllib.loads((Path(__file__).parent / "layers.toml").read_text(encoding="utf-8"))


def module_files(package: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every .py under `package` (a package is its __init__)."""
    files = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        files[name] = path
    return files


def _runtime_nodes(tree: ast.AST):
    """Every node except those under `if TYPE_CHECKING:` (annotations only; they never import)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            stack.extend(node.orelse)
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def imports(files: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the package modules it imports (top level or inside functions), resolved to known modules."""

    def resolve(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {}
    for module, path in files.items():
        found = set()
        for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found |= {resolve(f"{node.module}.{a.name}") for a in node.names}
            elif isinstance(node, ast.Import):
                found |= {resolve(a.name) for a in node.names}
        # importing a package's own __init__ from inside it is Python's own order, not a dependency
        edges[module] = {m for m in found if m and m != module and not module.startswith(m + ".")}
    return edges


def layer_of(module: str, layers: list[dict]) -> int:
    best, best_len = None, -1
    for index, layer in enumerate(layers):
        for prefix in layer["modules"]:
            covers = module == prefix or (not layer.get("exact") and module.startswith(prefix + "."))
            if covers and len(prefix) > best_len:
                best, best_len = index, len(prefix)
    if best is None:
        raise AssertionError(f"{module} is in no layer of tests/layers.toml: add it to one")
    return best


def violations(edges: dict[str, set[str]], contract: dict) -> list[str]:
    layers = contract["layers"]
    allowed = {(a["importer"], a["imported"]) for a in contract.get("allowed", [])}
    found = []
    for importer, imported in sorted((a, b) for a, bs in edges.items() for b in bs):
        if layer_of(imported, layers) < layer_of(importer, layers) and (importer, imported) not in allowed:
            found.append(f"{importer} ({layers[layer_of(importer, layers)]['name']}) imports {imported} "
                         f"({layers[layer_of(imported, layers)]['name']}), a layer above")
    return found


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


@pytest.fixture(scope="module")
def edges():
    return imports(module_files(ROOT / "sdcompile"))


def test_no_module_imports_a_layer_above_its_own(edges):
    assert violations(edges, CONTRACT) == []


def test_no_import_cycle(edges):
    assert cycles(edges) == []


def test_every_allowed_exception_is_still_needed(edges):
    for entry in CONTRACT.get("allowed", []):
        assert entry["imported"] in edges.get(entry["importer"], set()), f"drop the stale exception {entry}"


def test_the_checker_sees_a_back_edge_and_a_cycle(tmp_path):
    """A core module importing a phase, and two modules importing each other, are both reported."""
    package = tmp_path / "sdcompile"
    for name, text in {
        "__init__.py": "",
        "core/__init__.py": "",
        "core/graph/__init__.py": "",
        "core/graph/capture.py": "def f():\n    from sdcompile.phases.verify.phase import run\n",
        "core/graph/dump.py": "from sdcompile.core.graph.align import x\n",
        "core/graph/align.py": "import sdcompile.core.graph.dump\nfrom typing import TYPE_CHECKING\n"
                               "if TYPE_CHECKING:\n    from sdcompile.phases import verify\n",
        "phases/__init__.py": "",
        "phases/verify/__init__.py": "",
        "phases/verify/phase.py": "from sdcompile.core.graph.capture import f\n",
    }.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text)
    found = imports(module_files(package))
    assert violations(found, CONTRACT) == [
        "sdcompile.core.graph.capture (core: graphs) imports sdcompile.phases.verify.phase (phases), a layer above"]
    assert cycles(found) == [["sdcompile.core.graph.align", "sdcompile.core.graph.dump"],
                             ["sdcompile.core.graph.capture", "sdcompile.phases.verify.phase"]]


SHARED_CHOICES = {"sdcompile.phases.choices"}  # the closed sets every phase and the CLI share (not a phase)


def renderer_violations(edges: dict[str, set[str]]) -> list[str]:
    """A phase's renderer (phases/<phase>/render*.py) reads only that phase's results: it imports no other phase
    and not its own phase.py (which runs the phase); shared presentation lives in sdcompile.rendering. It may word
    another phase's reason that its result carries (scaffold's path holds phase 1's) through that phase's renderer."""
    found = []
    for importer, imported in sorted((a, b) for a, bs in edges.items() for b in bs):
        parts = importer.split(".")
        if len(parts) != 4 or parts[1] != "phases" or not parts[3].startswith("render"):
            continue
        own = ".".join(parts[:3])
        other_renderer = imported.count(".") == 3 and imported.rsplit(".", 1)[1] == "render"
        if imported.startswith("sdcompile.phases.") and not other_renderer and imported not in SHARED_CHOICES and (
                not imported.startswith(own + ".") or imported == own + ".phase"):
            found.append(f"{importer} (a renderer) imports {imported}: a renderer reads only {own}'s results")
    return found


def test_a_renderer_reads_only_its_own_phase_results(edges):
    assert renderer_violations(edges) == []


def test_the_renderer_rule_sees_another_phase_and_its_own_phase_module():
    edges = {"sdcompile.phases.verify.render": {"sdcompile.phases.verify.results", "sdcompile.phases.debug.results",
                                                "sdcompile.phases.verify.phase", "sdcompile.rendering.versions"}}
    assert renderer_violations(edges) == [
        "sdcompile.phases.verify.render (a renderer) imports sdcompile.phases.debug.results: a renderer reads only "
        "sdcompile.phases.verify's results",
        "sdcompile.phases.verify.render (a renderer) imports sdcompile.phases.verify.phase: a renderer reads only "
        "sdcompile.phases.verify's results"]


MAX_MODULE_LINES = 400  # beside ruff's C901 limit (pyproject.toml): a module holds one job


def test_no_module_is_over_the_size_limit():
    long = {str(path.relative_to(ROOT)): n for path in (ROOT / "sdcompile").rglob("*.py")
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert long == {}, f"split these by responsibility (limit {MAX_MODULE_LINES} lines): {long}"


# Inside a phase, only its renderer (and the modules that write its pages) imports its renderer: decisions return typed
# fields and reasons, and words are made when a result is shown. The modules below still build their reasons with the
# renderer's sentence builders; the list only shrinks (a module that stops is dropped from it, a new one fails).
PRESENTERS = {
    "sdcompile.phases.explain.catalog_page",  # writes docs/mismatch-catalog.md from the renderer's Markdown
    "sdcompile.phases.verify.report_files",  # writes verify's report.md evidence with the renderer's Markdown
    "sdcompile.phases.analyze.artifacts",  # writes phase 1's snippets and the status line, worded by the renderer
    "sdcompile.phases.scaffold.record",  # writes the status line `sdcompile status` shows, worded by the renderer
}
WORDED_DECISIONS: set[str] = set()  # decision modules that still word their reasons (none: keep it so)


def decisions_importing_their_renderer(edges: dict[str, set[str]]) -> set[str]:
    """The modules of a phase, other than its renderers, that import that phase's renderer."""
    found = set()
    for importer, imported in edges.items():
        parts = importer.split(".")
        if len(parts) != 4 or parts[1] != "phases" or parts[3].startswith("render"):
            continue
        own = ".".join(parts[:3])
        if any(b.startswith(own + ".render") for b in imported):
            found.add(importer)
    return found


def test_inside_a_phase_only_its_renderer_imports_its_renderer(edges):
    found = decisions_importing_their_renderer(edges) - PRESENTERS
    assert found - WORDED_DECISIONS == set(), "a decision module imports its phase's renderer: return typed fields"
    assert WORDED_DECISIONS - found == set(), "these no longer import the renderer: drop them from WORDED_DECISIONS"


def test_the_decision_rule_sees_a_phase_module_importing_its_renderer():
    edges = {"sdcompile.phases.register.measured": {"sdcompile.phases.register.render"},
             "sdcompile.phases.register.render": {"sdcompile.phases.register.results"},
             "sdcompile.cli.register": {"sdcompile.phases.register.render"}}
    assert decisions_importing_their_renderer(edges) == {"sdcompile.phases.register.measured"}
