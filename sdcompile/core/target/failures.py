"""How a failure inside the target tree reads: the root exception and the tree's deepest frame in it."""

from __future__ import annotations

import traceback
from pathlib import Path


def root_cause(exc: BaseException) -> BaseException:
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
    exc = root_cause(exc)
    where = ""
    if tree_root is not None:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if str(tree_root) in f.filename]
        if frames:
            f = frames[-1]
            where = f" ({Path(f.filename).relative_to(tree_root)}:{f.lineno})"
    lines = [ln for ln in str(exc).strip().splitlines() if ln.strip()]
    text = lines[0].strip() if lines else ""
    return f"{type(exc).__name__}: {text}{where}"
