"""A deadline on user code (a model's build and forward): past it, the command ends with exit 2 naming what hung.

    seconds = timeout_seconds(timeout)               # --timeout, else $SDCOMPILE_TIMEOUT, else 600; 0 = none
    with deadline(seconds, "my_model.py:build()", "build"):
        module, inputs = factory()

On POSIX, on the main thread, the body runs under a SIGALRM interval timer (signal.setitimer): when it fires, the
handler raises in whatever Python code runs, which interrupts pure-Python loops and time.sleep. It is raised as a
BaseException, so the user's (or torch's) `except Exception` does not swallow it, and turned into a TimedOut
(BadInput, exit 2) when it leaves the `with`. Limits, by design of signals: C code that never returns to the
interpreter (a native op stuck in a loop) cannot be interrupted this way; off the main thread, or where the
platform has no SIGALRM (Windows), there is no deadline at all and the body simply runs.
"""

from __future__ import annotations

import math
import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from sdcompile.util.errors import BadInput

TIMEOUT_ENV = "SDCOMPILE_TIMEOUT"
DEFAULT_TIMEOUT = 600.0  # generous: a tiny zoo model builds and runs in seconds; a real one in a minute or two


class TimedOut(BadInput):
    """User code ran past its deadline (exit 2)."""


class _Expired(BaseException):
    # Raised by the alarm inside the user's code; a BaseException so `except Exception` lets it through.
    pass


def timeout_seconds(timeout: float | None = None) -> float:
    """`timeout` when given, else $SDCOMPILE_TIMEOUT, else DEFAULT_TIMEOUT; 0 means no deadline."""
    if timeout is None:
        raw = os.environ.get(TIMEOUT_ENV, "").strip()
        try:
            timeout = float(raw) if raw else DEFAULT_TIMEOUT
        except ValueError:
            raise BadInput(f"${TIMEOUT_ENV}={raw!r} is not a number of seconds",
                           f"unset it or set e.g. {TIMEOUT_ENV}=1200") from None
    if math.isnan(timeout) or timeout < 0:
        raise BadInput(f"timeout {timeout:g} is not a number of seconds >= 0", "pass e.g. --timeout 1200 (0: none)")
    return float(timeout)


def can_interrupt() -> bool:
    """Whether a deadline is enforced here: POSIX signals, on the main thread."""
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextmanager
def deadline(seconds: float, subject: str, stage: str) -> Iterator[None]:
    """Run the body with at most `seconds` (0: unlimited); past them raise TimedOut naming `subject` and `stage`
    ("build" or "forward"). Nested, the inner timer runs alone; an enclosing one (ours or another SIGALRM user's) is
    restored afterwards with what is left of it, and its handler with it."""
    if not seconds or not can_interrupt():
        yield
        return

    def expire(_signum, _frame):
        raise _Expired

    previous_handler = signal.signal(signal.SIGALRM, expire)
    previous_delay, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
    started = time.monotonic()
    try:
        yield
    except _Expired:
        raise TimedOut(
            f"{subject}: the model's {stage} did not finish within {seconds:g} s",
            f"if it is only slow, pass a larger --timeout N (seconds; or ${TIMEOUT_ENV}); else fix the model, whose "
            f"{stage} may never return",
        ) from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous_handler)
        if previous_delay:  # an enclosing deadline: it keeps running, and fires now if it already passed
            signal.setitimer(signal.ITIMER_REAL, max(previous_delay - (time.monotonic() - started), 1e-3))
