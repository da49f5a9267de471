"""How the op travels through scaffold, watched on a real run that generates (a hand-written AdaLN-after-RMSNorm
block, tests/scaffold/data/adaln_rms_forms.py): scaffold's phase resolves the op once and hands its parts what they
need of it (its recipes, its title, a site locator, a name deriver), so no other module of phases/scaffold takes the
op's name; and nothing in core/ calls back into a phase (a lambda of the phase run by core/graph, say): the layers
point down at run time too, not only in their imports (tests/test_layers.py)."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data" / "adaln_rms_forms.py"
PACKAGE = Path(__file__).resolve().parents[2] / "sdcompile"


PREFIX = f"{PACKAGE}/"


def _where(filename: str) -> str | None:
    """The module path inside the package ("phases/scaffold/phase.py"), None outside it."""
    return filename[len(PREFIX):] if filename.startswith(PREFIX) else None


@pytest.mark.slow
def test_only_the_phase_takes_the_op_and_core_never_calls_back_into_a_phase(target, tmp_path):
    from sdcompile.phases.scaffold.phase import scaffold

    op = "adaln"
    takes_op: set[str] = set()
    calls_up: set[tuple[str, str, str]] = set()

    def watch(frame, event, _arg):  # on every call torch makes too: the cheap test first
        if event != "call" or not frame.f_code.co_filename.startswith(PREFIX):
            return
        callee = _where(frame.f_code.co_filename)
        caller = _where(frame.f_back.f_code.co_filename) if frame.f_back is not None else None
        if caller is not None and caller.startswith("core/") and callee.startswith("phases/"):
            calls_up.add((caller, callee, frame.f_code.co_name))
        if callee.startswith("phases/scaffold/"):
            code = frame.f_code
            arguments = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
            if any(type(frame.f_locals.get(a)) is str and frame.f_locals[a] == op for a in arguments):
                takes_op.add(callee)

    sys.setprofile(watch)
    threading.setprofile(watch)
    try:
        result = scaffold(model_file=f"{DATA}:table", name="rms_table", op=op, dtype="fp32", repo=target,
                          workdir=tmp_path / "ws", dry_run=True)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)

    assert result.decision == "generate" and result.gate == "pass", result.decision_reason  # the whole path ran
    assert result.numerics  # the numerics gate included
    assert takes_op == {"phases/scaffold/phase.py"}
    assert calls_up == set()
