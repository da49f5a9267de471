"""Loaded by the interpreter `sdcompile capture -- COMMAND` starts (its folder is first on PYTHONPATH): starts the
recorder as $SDCOMPILE_CAPTURE_OUT says, then loads the sitecustomize this one shadows, if there is one."""

import importlib
import os
import sys

if os.environ.get("SDCOMPILE_CAPTURE_OUT"):
    try:
        from sdcompile.core.zoo.recorder import start_from_environment

        start_from_environment()
    except Exception as exc:  # noqa: BLE001 - the program runs anyway; sdcompile capture reports no capture
        print(f"sdcompile capture: the recorder could not start: {type(exc).__name__}: {exc}", file=sys.stderr)

_here = os.path.dirname(os.path.abspath(__file__))
_rest = [p for p in sys.path if os.path.abspath(p or ".") != _here]
_saved, sys.path[:] = list(sys.path), _rest
_me = sys.modules.pop("sitecustomize", None)
try:
    importlib.import_module("sitecustomize")
except ImportError:  # none to chain to: this one stays the interpreter's sitecustomize
    if _me is not None:
        sys.modules["sitecustomize"] = _me
finally:
    sys.path[:] = _saved
