"""sdcompile: a workbench for adapting diffusion transformers to MindIE-SD's torch.compile backend.

The commands as functions (docs/api.md): each takes the command's options as keyword arguments and returns
the typed result the command renders. They load lazily, so `import sdcompile` imports neither torch nor
diffusers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sdcompile._version import __version__

if TYPE_CHECKING:
    from sdcompile.api import (
        analyze,
        backends,
        capture,
        check_registration,
        copy_audit,
        debug,
        doctor,
        integrate,
        profile,
        register,
        run,
        scaffold,
        status,
        verify,
    )

__all__ = ["__version__", "analyze", "backends", "capture", "check_registration", "copy_audit", "debug", "doctor",
           "integrate", "profile", "register", "run", "scaffold", "status", "verify"]


def __getattr__(name: str):
    if name in __all__:
        from sdcompile import api

        return getattr(api, name)
    raise AttributeError(f"module 'sdcompile' has no attribute {name!r}")
