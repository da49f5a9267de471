"""The user's own model: import `--model-file path.py:factory` and call its factory, containing what user code may do
(raise, call sys.exit, return the wrong thing) as BadInput naming the file."""

from __future__ import annotations

import importlib.util
import inspect
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sdcompile.util.errors import BadInput


def _import_file(path: Path):
    stem = re.sub(r"\W", "_", path.stem)
    for name in (stem, f"_sdcompile_model_{stem}"):  # imported already (an earlier build in this process)
        existing = sys.modules.get(name)
        if existing is not None and getattr(existing, "__file__", None) == str(path):
            return existing
    # its own name when free (reports then say `my_model.MyRMSNorm`), else a prefixed one
    name = stem if stem.isidentifier() and stem not in sys.modules else f"_sdcompile_model_{stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise BadInput(f"cannot import {path} as Python", "pass a .py file")
    module = importlib.util.module_from_spec(spec)
    # Registered before executing so classes defined there resolve their source (inspect) and pickle.
    sys.modules[name] = module
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)  # so the file can import its sibling modules
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:
        del sys.modules[name]
        raise BadInput(f"importing {path} failed: {_raised(exc)}", "fix the model file") from exc
    except BaseException:  # interrupted (a deadline, Ctrl-C): a later build imports it afresh
        del sys.modules[name]
        raise
    return module


def _raised(exc: BaseException) -> str:
    # SystemExit is the user's code ending the process: left alone, `sys.exit(0)` would pass any CI gate.
    if isinstance(exc, SystemExit):
        return f"it called sys.exit({exc.code!r}), which a model file must not do"
    return f"{type(exc).__name__}: {exc}"


def build_from_file(path: Path, factory_name: str) -> tuple[Any, dict[str, Any]]:
    """(module, forward kwargs) from the factory `factory_name` in the user's file `path`; BadInput for anything
    the file or its factory does wrong (an exception, sys.exit, a result of another shape)."""
    import torch

    module = _import_file(path)
    factory = getattr(module, factory_name, None)
    if not callable(factory):
        names = sorted(n for n, v in vars(module).items() if inspect.isfunction(v) and v.__module__ == module.__name__)
        listing = f" (functions: {', '.join(names)})" if names else ""
        raise BadInput(
            f"{path.name} has no function {factory_name!r}{listing}",
            "pass path.py:<factory> where factory() returns (module, example_kwargs)",
        )
    try:
        result = factory()
    except (Exception, SystemExit) as exc:
        raise BadInput(f"{path}:{factory_name}() failed: {_raised(exc)}", "fix the factory") from exc
    if isinstance(result, Mapping):
        model = result.get("module", result.get("model"))
        inputs = result.get("inputs", result.get("kwargs"))
    elif isinstance(result, (tuple, list)) and len(result) == 2:
        model, inputs = result
    else:
        model = inputs = None
    if not isinstance(model, torch.nn.Module) or not isinstance(inputs, Mapping):
        raise BadInput(
            f"{path.name}:{factory_name}() must return (module, kwargs): an nn.Module and a dict of its "
            f"forward keyword arguments; it returned {type(result).__name__}",
            "return e.g. `return model, {'hidden_states': torch.randn(1, 16, 32)}`",
        )
    if not all(isinstance(k, str) for k in inputs):
        raise BadInput(f"{path.name}:{factory_name}() returned kwargs with non-string keys", "use str keys")
    return model, dict(inputs)
