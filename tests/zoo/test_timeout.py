"""A model file that hangs ends the command: --timeout (or $SDCOMPILE_TIMEOUT) bounds its build and each forward,
and past it the command exits 2 with one line naming the file, what hung and the fix, instead of never returning."""

import json
import threading
import time
from pathlib import Path

import pytest

from sdcompile.core.zoo.deadline import DEFAULT_TIMEOUT, TIMEOUT_ENV, TimedOut, can_interrupt, deadline, timeout_seconds
from sdcompile.util.errors import BadInput

HANDWRITTEN = (Path(__file__).resolve().parents[1] / "analyze/data/handwritten_model.py").read_text()
# Started in a fresh process, the command imports torch and diffusers before the model's code runs: allow for that.
STARTUP = 90

HANGS = {
    "build": "import time\n\ndef build():\n    while True:\n        time.sleep(0)\n",
    "forward": HANDWRITTEN.replace("def build(", "def _build(") + (
        "\n\ndef build():\n    module, kwargs = _build()\n"
        "    def hang(*_):\n        while True:\n            pass\n"
        "    module.register_forward_pre_hook(hang)\n    return module, kwargs\n"),
}


def _model_file(tmp_path: Path, where: str) -> Path:
    path = tmp_path / f"hangs_in_{where}.py"
    path.write_text(HANGS[where])
    return path


def _one_error_line(result) -> str:
    [line] = result.stderr.splitlines()
    assert json.loads(result.stdout) == {"error": line.removeprefix("error: "), "exit_code": 2}  # nothing else
    return line


@pytest.mark.parametrize("where", ["build", "forward"])
def test_a_model_file_that_hangs_is_exit_2_naming_the_file_and_what_hung(cli, tmp_path, where):
    path = _model_file(tmp_path, where)
    started = time.monotonic()
    result = cli("analyze", "--model-file", f"{path}:build", "--op", "rmsnorm", "--timeout", "2", "--json",
                 "--workdir", str(tmp_path / "ws"), cwd=tmp_path, timeout=STARTUP + 60)
    assert result.exit_code == 2, result.stderr[-2000:]
    assert time.monotonic() - started < STARTUP
    line = _one_error_line(result)
    assert line.startswith(f"error: {path}:build: the model's {where} did not finish within 2 s — ")
    assert "pass a larger --timeout N" in line and f"fix the model, whose {where} may never return" in line


def test_the_timeout_comes_from_the_environment_too(cli, tmp_path):
    path = tmp_path / "sleeps.py"
    path.write_text("import time\n\ndef build():\n    time.sleep(10**6)\n")
    result = cli("analyze", "--model-file", f"{path}:build", "--op", "rmsnorm", "--json", "--workdir",
                 str(tmp_path / "ws"), cwd=tmp_path, env={TIMEOUT_ENV: "1.5"}, timeout=STARTUP + 60)
    assert result.exit_code == 2, result.stderr[-2000:]
    assert _one_error_line(result).startswith(f"error: {path}:build: the model's build did not finish within 1.5 s")


def test_profile_bounds_its_forward_too(cli, tmp_path):
    path = _model_file(tmp_path, "forward")
    result = cli("profile", "--model-file", f"{path}:build", "--mode", "eager", "--out", str(tmp_path / "prof"),
                 "--timeout", "2", cwd=tmp_path, timeout=STARTUP + 60)
    assert result.exit_code == 2, result.stderr[-2000:]
    assert result.stderr.splitlines()[-1].startswith(f"error: {path}:build: the model's forward did not finish "
                                                     "within 2 s")


@pytest.mark.parametrize(("command", "where", "what"), [
    # every command runs the model eagerly first (core/zoo/model_step.py): the plain forward is what hangs
    (("scaffold", "--op", "rmsnorm", "--name", "hangs", "--dry-run"), "forward", "forward"),
    (("verify", "--op", "rmsnorm", "--all-groups"), "forward", "forward"),
    (("debug", "--op", "rmsnorm"), "forward", "forward"),
    (("integrate", "--op", "rmsnorm"), "forward", "forward"),
    (("run", "--op", "rmsnorm", "--name", "hangs"), "build", "build"),
])
def test_every_command_taking_a_model_file_bounds_it(cli, tmp_path, mindiesd_tree, command, where, what):
    path = _model_file(tmp_path, where)
    result = cli(command[0], "--model-file", f"{path}:build", *command[1:], "--timeout", "3", "--repo",
                 str(mindiesd_tree), "--workdir", str(tmp_path / "ws"), cwd=tmp_path, timeout=STARTUP + 60)
    assert result.exit_code == 2, result.stderr[-2000:]
    assert result.stderr.splitlines()[-1].startswith(f"error: {path}:build: the model's {what} did not finish "
                                                     "within 3 s")


def test_a_bad_timeout_is_a_usage_error(cli, tmp_path):
    result = cli("analyze", "--model", "flux", "--timeout", "-1", cwd=tmp_path)
    assert result.exit_code == 2
    assert "--timeout" in result.stderr


# --------------------------------------------------------------------------------------------- the mechanism
# In this process: the deadline needs the main thread (a test runner may run tests on another: then they skip).
on_the_main_thread = pytest.mark.skipif(not can_interrupt(), reason="no SIGALRM deadline off the main thread")
def test_the_default_is_generous_and_the_environment_overrides_it(monkeypatch):
    monkeypatch.delenv(TIMEOUT_ENV, raising=False)
    assert timeout_seconds() == DEFAULT_TIMEOUT == 600
    monkeypatch.setenv(TIMEOUT_ENV, "30")
    assert timeout_seconds() == 30
    assert timeout_seconds(5) == 5  # --timeout wins
    monkeypatch.setenv(TIMEOUT_ENV, "soon")
    with pytest.raises(BadInput, match=r"\$SDCOMPILE_TIMEOUT='soon' is not a number of seconds"):
        timeout_seconds()


def test_a_normal_build_and_forward_are_unaffected(tmp_path, monkeypatch):
    from sdcompile.core.zoo.models import build_model, resolve_model

    monkeypatch.delenv(TIMEOUT_ENV, raising=False)
    path = tmp_path / "handwritten_model.py"
    path.write_text(HANDWRITTEN)
    built = build_model(resolve_model(model_file=f"{path}:build"), "fp32")
    assert built.timeout == DEFAULT_TIMEOUT
    with built.forward_deadline():
        built.module(**built.inputs)


@on_the_main_thread
def test_the_deadline_interrupts_python_even_through_except_exception():

    def swallowing_loop():
        while True:
            try:
                time.sleep(0.01)
            except Exception:  # noqa: BLE001 - user code that swallows errors must not swallow the deadline
                pass

    started = time.monotonic()
    with pytest.raises(TimedOut, match=r"^m\.py:build: the model's forward did not finish within 0\.2 s$"):
        with deadline(0.2, "m.py:build", "forward"):
            swallowing_loop()
    assert time.monotonic() - started < 5


@on_the_main_thread
def test_a_body_within_its_deadline_leaves_no_timer_and_an_enclosing_one_keeps_running():
    import signal

    with pytest.raises(TimedOut, match="the model's build"):
        with deadline(0.5, "m.py:build", "build"):
            with deadline(10, "m.py:build", "forward"):
                pass
            time.sleep(5)
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    with deadline(0, "m.py:build", "build"):  # 0: no deadline
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_off_the_main_thread_there_is_no_deadline():
    seen = []

    def body():
        seen.append(can_interrupt())
        with deadline(0.1, "m.py:build", "build"):
            time.sleep(0.3)
        seen.append("returned")

    worker = threading.Thread(target=body)
    worker.start()
    worker.join(10)
    assert seen == [False, "returned"]
