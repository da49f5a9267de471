"""sdcompile's own log: stdlib logging under the `sdcompile` logger, shown on stderr through rich's handler only
when asked (`sdcompile -v` for what each step does, `-vv` for details). Results never go through the log: they are
the commands' output, so `--json` stdout and the verdict line stay the same at any verbosity."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager

ROOT = "sdcompile"
# -v count -> level; without -v only warnings sdcompile logs (none are expected in normal runs) reach stderr
_LEVELS = {0: logging.WARNING, 1: logging.INFO}


def get_logger(module: str) -> logging.Logger:
    """The logger of one module (`get_logger(__name__)`), a child of `sdcompile`."""
    return logging.getLogger(module if module.startswith(ROOT) else f"{ROOT}.{module}")


_state = {"verbosity": 0, "quiet": False}


def verbosity() -> int:
    """The -v count of this command (0 without -v)."""
    return _state["verbosity"]


def is_quiet() -> bool:
    """-q: no progress, notes or other messages on stderr, only errors (and the result on stdout)."""
    return _state["quiet"]


def configure(verbosity: int, *, quiet: bool = False) -> None:
    """Attach one handler on stderr to the `sdcompile` logger at the level `verbosity` (-v count) asks for (errors
    only with `quiet`). Idempotent: a second call (one process running several commands) replaces the handler's
    level only."""
    _state.update(verbosity=verbosity, quiet=quiet)
    logger = logging.getLogger(ROOT)
    logger.setLevel(logging.ERROR if quiet else _LEVELS.get(verbosity, logging.DEBUG))
    logger.propagate = False  # the user's or pytest's root handlers do not print it twice
    if not any(getattr(h, "_sdcompile", False) for h in logger.handlers):
        handler = _handler(verbosity)
        handler._sdcompile = True  # type: ignore[attr-defined]
        logger.addHandler(handler)


@contextmanager
def library_warnings_to_log() -> Iterator[None]:
    """Python warnings raised inside torch (inductor's "does not support code generation for complex operators",
    dynamo's) go to the log at INFO, shown with -v, instead of breaking a progress display; others (a model
    file's) are shown as usual. So do fake-tensor tracebacks of a failed meta run: register_replacement's check
    retraces a search function on every structural match, and one whose shape literals belong to another site
    fails there by design (the match is then rejected)."""
    import warnings

    shown = warnings.showwarning
    log = get_logger("sdcompile.torch")

    def show(message, category, filename, lineno, file=None, line=None):
        if f"{os.sep}torch{os.sep}" in str(filename) or f"{os.sep}torch_npu{os.sep}" in str(filename):
            log.info("%s from %s:%s: %s", category.__name__, filename, lineno, message)
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    fake_tensor = logging.getLogger("torch._subclasses.fake_tensor")
    meta_failures = _MetaFailuresToLog(log)
    fake_tensor.addFilter(meta_failures)
    try:
        yield
    finally:
        warnings.showwarning = shown
        fake_tensor.removeFilter(meta_failures)


class _MetaFailuresToLog(logging.Filter):
    def __init__(self, log: logging.Logger):
        super().__init__()
        self.log = log

    def filter(self, record: logging.LogRecord) -> bool:
        if "failed while attempting to run meta" not in record.getMessage():
            return True
        self.log.info("torch fake tensor: %s (%s)", record.getMessage(), record.exc_info[1] if record.exc_info else "")
        return False


class _CurrentStderr(logging.StreamHandler):
    """Writes to whatever sys.stderr is at each record (a test runner swaps it per command), not the one at init."""

    @property
    def stream(self):
        import sys

        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


def _handler(verbosity: int) -> logging.Handler:
    """rich's handler on a terminal; plain lines (no wrapping, no padding) when stderr is piped or captured."""
    import sys

    if not sys.stderr.isatty():
        handler = _CurrentStderr()
        where = " %(name)s:%(lineno)d" if verbosity > 1 else ""
        handler.setFormatter(logging.Formatter(f"[%(asctime)s] %(levelname)s{where} %(message)s", "%H:%M:%S"))
        return handler
    from rich.console import Console
    from rich.logging import RichHandler

    return RichHandler(console=Console(stderr=True), show_path=verbosity > 1, markup=False, rich_tracebacks=False,
                       log_time_format="[%X]")
