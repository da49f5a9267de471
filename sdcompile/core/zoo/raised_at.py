"""Where an exception from user code was raised: the line of the model's own code (a model file, diffusers), not
torch's, sdcompile's or the standard library's, so an error names the line to look at."""

from __future__ import annotations

import os
import sys
import sysconfig

from sdcompile.util.source_paths import short_path


def first_line(exc: BaseException) -> str:
    """An exception's message as one line (torch's own errors run to pages; the traceback is on request)."""
    return (str(exc).strip().splitlines() or [""])[0]


def raising_line(exc: BaseException) -> str:
    """file:line of the innermost frame of `exc`'s traceback (for sys.exit: its caller)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}" if tb is not None else "user code"


def model_frame(exc: BaseException) -> str | None:
    """`file:line in function` of the innermost frame of `exc`'s traceback in the model's own code (its file,
    diffusers): not torch's, sdcompile's or the standard library's; None when every frame is theirs."""
    torch = sys.modules.get("torch")
    theirs = tuple(os.path.dirname(m.__file__) + os.sep for m in (torch, sys.modules[__package__.split(".")[0]])
                   if m is not None and getattr(m, "__file__", None))
    theirs += (sysconfig.get_paths()["stdlib"] + os.sep,)
    found, tb = None, exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if not code.co_filename.startswith(theirs) and not code.co_filename.startswith("<"):
            found = f"{_shown(code.co_filename)}:{tb.tb_lineno} in {code.co_name}"
        tb = tb.tb_next
    return found


def _shown(path: str) -> str:
    here = os.getcwd() + os.sep
    return path[len(here):] if path.startswith(here) else short_path(path)
