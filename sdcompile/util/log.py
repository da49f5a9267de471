"""sdcompile's own log: stdlib logging under the `sdcompile` logger, shown on stderr through rich's handler only
when asked (`sdcompile -v` for what each step does, `-vv` for details). Results never go through the log: they are
the commands' output, so `--json` stdout and the verdict line stay the same at any verbosity."""

from __future__ import annotations

import logging

ROOT = "sdcompile"
# -v count -> level; without -v only warnings sdcompile logs (none are expected in normal runs) reach stderr
_LEVELS = {0: logging.WARNING, 1: logging.INFO}


def get_logger(module: str) -> logging.Logger:
    """The logger of one module (`get_logger(__name__)`), a child of `sdcompile`."""
    return logging.getLogger(module if module.startswith(ROOT) else f"{ROOT}.{module}")


def configure(verbosity: int) -> None:
    """Attach one handler on stderr to the `sdcompile` logger at the level `verbosity` (-v count) asks for.
    Idempotent: a second call (one process running several commands) replaces the handler's level only."""
    logger = logging.getLogger(ROOT)
    logger.setLevel(_LEVELS.get(verbosity, logging.DEBUG))
    logger.propagate = False  # the user's or pytest's root handlers do not print it twice
    if not any(getattr(h, "_sdcompile", False) for h in logger.handlers):
        handler = _handler(verbosity)
        handler._sdcompile = True  # type: ignore[attr-defined]
        logger.addHandler(handler)


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
