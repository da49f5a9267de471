"""The code a model's forward can reach, read from its source (stdlib `ast` and `inspect`, no run): the forward of
every submodule's class, the `__call__` of the attention processors its modules hold (`module.processor`), and the
functions and methods those call, followed through the names their code resolves (module globals, imports inside
a function, `self.method`, `super().method`, nested functions).

The walk stays in the code a model brings: the packages its classes come from (diffusers, a user's file) and torch's
module classes (`torch/nn/modules`), never torch's internals, which runtrace does not record either.
`static_match` then finds the primitive calls in that code and `unexercised` compares them with the lines a
recorded forward ran. Parsed files are cached by path and modification time.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import linecache
import os
import sys
import sysconfig
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

_MAX_UNITS = 600  # functions read from one model; a cap, not a budget any real model reaches
_FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


@lru_cache(maxsize=4096)
def _parse_function(path: str, first_line: int, mtime_ns: int) -> _FunctionNode | None:
    """The function whose source starts at `first_line` of `path` (its def or first decorator), parsed alone with
    the file's line numbers: only the functions a model reaches are parsed, never whole files."""
    lines = linecache.getlines(path)
    if not 0 < first_line <= len(lines):
        return None
    try:
        block = inspect.getblock(lines[first_line - 1:])
        indented = block[0][:1] in (" ", "\t")
        tree = ast.parse(("if 1:\n" if indented else "") + "".join(block))
    except (SyntaxError, ValueError, IndentationError, IndexError):
        return None
    node = tree.body[0].body[0] if indented else tree.body[0]  # type: ignore[attr-defined]
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    ast.increment_lineno(tree, first_line - 1 - (1 if indented else 0))
    return node


def function_node(path: str, first_line: int) -> _FunctionNode | None:
    """The parsed function at `first_line` of `path` (cached until the file changes); None without a source."""
    try:
        mtime = os.stat(path).st_mtime_ns
    except OSError:
        return None
    return _parse_function(path, first_line, mtime)


def source_line(path: str, line: int) -> str:
    lines = linecache.getlines(path)
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


@dataclass(eq=False)
class Unit:
    """One function's source: what the walk reads and `static_match` searches."""

    file: str  # real path
    qualname: str  # "AllegroAttnProcessor2_0.__call__"
    node: _FunctionNode
    namespace: dict[str, Any] = field(repr=False)  # the defining module's globals
    owner: type | None = None  # the class `self` is in its code
    defined_on: type | None = None  # the class whose body defines it (for super())

    @property
    def key(self) -> tuple[str, int]:
        return (self.file, self.node.lineno)

    @property
    def first_line(self) -> int:
        """Its code object's co_firstlineno: the first decorator's line, else the def's."""
        return min([self.node.lineno, *(d.lineno for d in self.node.decorator_list)])

    @property
    def params(self) -> tuple[str, ...]:
        a = self.node.args
        names = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
        return tuple(n for n in names if n not in ("self", "cls"))


@dataclass(frozen=True)
class CallEdge:
    call: ast.Call
    caller: Unit


@dataclass
class Reach:
    units: dict[tuple[str, int], Unit]
    roots: set[tuple[str, int]]
    callees: dict[tuple[tuple[str, int], int], tuple[Unit, ...]]  # (caller key, id(call)) -> the units it reaches
    callers: dict[tuple[str, int], CallEdge]  # the first call found to each unit that is not a root
    live: dict[type, list[Any]]  # each class of the model's modules and processors -> its instances


def _defining_class(cls: type, name: str) -> type | None:
    return next((k for k in inspect.getmro(cls) if name in vars(k)), None)


def _package_dir(obj: Any) -> str | None:
    top = (getattr(obj, "__module__", "") or "").split(".")[0]
    mod = sys.modules.get(top)
    file = getattr(mod, "__file__", None)
    if not file:
        return None
    file = os.path.realpath(file)
    return os.path.dirname(file) + os.sep if os.path.basename(file) == "__init__.py" else file


class Walker:
    """Walks from a model's roots; `reach()` returns what it found."""

    def __init__(self, model: Any):
        import torch

        torch_dir = os.path.realpath(os.path.dirname(torch.__file__)) + os.sep
        self._torch_dir, self._torch_modules = torch_dir, os.path.join(torch_dir, "nn", "modules") + os.sep
        self._module_type = torch.nn.Module
        self.live: dict[type, list[Any]] = {}
        for m in model.modules():
            self.live.setdefault(type(m), []).append(m)
            processor = getattr(m, "processor", None)
            if processor is not None and not isinstance(processor, torch.nn.Module) and callable(processor):
                self.live.setdefault(type(processor), []).append(processor)
        self._allowed = {d for d in (_package_dir(c) for c in self.live) if d and not d.startswith(torch_dir)}
        self._elsewhere = tuple(os.path.realpath(p) + os.sep for key in ("stdlib", "platstdlib", "purelib", "platlib")
                                if (p := sysconfig.get_paths().get(key)))
        self.units: dict[tuple[str, int], Unit] = {}
        self.callees: dict[tuple[tuple[str, int], int], tuple[Unit, ...]] = {}
        self.callers: dict[tuple[str, int], CallEdge] = {}
        self.roots: set[tuple[str, int]] = set()
        self._local_defs: dict[tuple[str, int], dict[str, _FunctionNode]] = {}

    def reach(self) -> Reach:
        queue: list[Unit] = []
        for cls in self.live:
            # a module's forward, and its own __call__ when it has one (an nn.Module attention processor); a
            # processor that is no module: its __call__
            names = ("forward", "__call__") if issubclass(cls, self._module_type) else ("__call__",)
            for unit in (self.method_unit(cls, name) for name in names):
                if unit is not None and unit.key not in self.roots:
                    self.roots.add(unit.key)
                    queue.append(unit)
        while queue and len(self.units) < _MAX_UNITS:
            unit = queue.pop()
            if unit.key in self.units:
                continue
            self.units[unit.key] = unit
            for call in (n for n in ast.walk(unit.node) if isinstance(n, ast.Call)):
                found = self.resolve(call, unit)
                self.callees[(unit.key, id(call))] = found
                for callee in found:
                    if callee.key not in self.roots:
                        self.callers.setdefault(callee.key, CallEdge(call, unit))
                    queue.append(callee)
        return Reach(self.units, self.roots, self.callees, self.callers, self.live)

    # ------------------------------------------------------------------------------------------ units
    def _readable(self, file: str) -> bool:
        if file.startswith(self._torch_dir):
            return file.startswith(self._torch_modules)
        if any(file.startswith(d) or file == d for d in self._allowed):
            return True  # the packages (or files) the model's classes come from
        return not file.startswith(self._elsewhere) and "-packages" + os.sep not in file  # user code

    def function_unit(self, fn: Any, owner: type | None = None, defined_on: type | None = None) -> Unit | None:
        fn = inspect.unwrap(getattr(fn, "__func__", fn))
        code = getattr(fn, "__code__", None)
        if code is None:
            return None
        file = os.path.realpath(code.co_filename)
        if not self._readable(file):
            return None
        return unit_of(fn, owner, defined_on)

    def method_unit(self, cls: type, name: str) -> Unit | None:
        where = _defining_class(cls, name)
        if where is None or where is self._module_type:
            return None
        return self.function_unit(vars(where)[name], owner=cls, defined_on=where)

    # ------------------------------------------------------------------------------------- resolution
    def resolve(self, call: ast.Call, unit: Unit) -> tuple[Unit, ...]:
        func = call.func
        if isinstance(func, ast.Name):
            return self._by_name(func.id, unit)
        if not isinstance(func, ast.Attribute):
            return ()
        base = func.value
        if isinstance(base, ast.Name) and base.id == "self" and unit.owner is not None:
            found = self.method_unit(unit.owner, func.attr) if self._is_method(unit.owner, func.attr) else None
            return (found,) if found else ()
        if _is_super(base) and unit.defined_on is not None:
            return self._super(unit, func.attr)
        if isinstance(base, ast.Name):
            target = unit.namespace.get(base.id)
            if inspect.ismodule(target):
                return self._function(getattr(target, func.attr, None), unit)
            return self._on_live(func.attr) if base.id not in unit.namespace else ()
        return ()

    def _is_method(self, cls: type, name: str) -> bool:
        where = _defining_class(cls, name)
        return where is not None and where is not self._module_type and inspect.isfunction(
            getattr(vars(where)[name], "__func__", vars(where)[name]))

    def _super(self, unit: Unit, name: str) -> tuple[Unit, ...]:
        mro = inspect.getmro(unit.owner or unit.defined_on)
        after = mro[mro.index(unit.defined_on) + 1:] if unit.defined_on in mro else ()
        where = next((k for k in after if name in vars(k)), None)
        if where is None or where is self._module_type:
            return ()
        found = self.function_unit(vars(where)[name], owner=unit.owner, defined_on=where)
        return (found,) if found else ()

    def _on_live(self, name: str) -> tuple[Unit, ...]:
        """`attn.prepare_attention_mask(...)`: the method of that name that one of the model's own classes defines
        itself (not one a base such as ModelMixin brings, which `x.to(...)` would otherwise reach)."""
        found = []
        for cls in self.live:
            if name in vars(cls) and self._is_method(cls, name):
                unit = self.method_unit(cls, name)
                if unit is not None and all(u.key != unit.key for u in found):
                    found.append(unit)
        return tuple(found)

    def _function(self, target: Any, unit: Unit) -> tuple[Unit, ...]:
        if inspect.isfunction(target) or inspect.ismethod(target):
            found = self.function_unit(target)
            return (found,) if found else ()
        return ()

    def _by_name(self, name: str, unit: Unit) -> tuple[Unit, ...]:
        if unit.key not in self._local_defs:
            self._local_defs[unit.key] = _nested_defs(unit.node)
        nested = self._local_defs[unit.key].get(name)
        if nested is not None:
            return (Unit(unit.file, f"{unit.qualname}.<locals>.{name}", nested, unit.namespace, unit.owner,
                         unit.defined_on),)
        if name in unit.namespace:
            return self._function(unit.namespace[name], unit)
        if hasattr(builtins, name):
            return ()
        return self._function(local_import(unit, name), unit)


def _is_super(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def _nested_defs(node: _FunctionNode) -> dict[str, _FunctionNode]:
    """The functions defined inside a function, by name (the first of a name wins)."""
    found: dict[str, _FunctionNode] = {}
    for child in ast.walk(node):
        if child is not node and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.setdefault(child.name, child)
    return found


def local_import(unit: Unit, name: str) -> Any:
    """What `name` is bound to by an import inside the function (`from .embeddings import apply_rotary_emb`),
    from modules already imported (sys.modules): nothing is imported to find it."""
    import importlib.util

    for node in ast.walk(unit.node):
        if not isinstance(node, ast.ImportFrom):
            continue
        alias = next((a for a in node.names if (a.asname or a.name) == name), None)
        if alias is None:
            continue
        try:
            module = importlib.util.resolve_name("." * node.level + (node.module or ""),
                                                 unit.namespace.get("__package__") or "")
        except (ImportError, ValueError):
            return None
        return getattr(sys.modules.get(module), alias.name, None)
    return None


def unit_of(fn: Any, owner: type | None = None, defined_on: type | None = None) -> Unit | None:
    """A Unit for a Python function with a source file; None for builtins and code without source."""
    fn = inspect.unwrap(getattr(fn, "__func__", fn)) if fn is not None else None
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    file = os.path.realpath(code.co_filename)
    node = function_node(file, code.co_firstlineno)
    if node is None:
        return None
    return Unit(file, getattr(fn, "__qualname__", node.name), node, fn.__globals__, owner, defined_on)


def callee_name(call: ast.Call) -> str:
    """`F.gelu(...)` -> "gelu", `apply_rotary_emb(...)` -> "apply_rotary_emb", `attn.norm_q(...)` -> "norm_q"."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def reach(model: Any) -> Reach:
    """The functions `model`'s forward can reach, read from source (see the module docstring)."""
    return Walker(model).reach()
