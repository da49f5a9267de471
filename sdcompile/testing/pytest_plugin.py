"""pytest plugin: the target's pattern tests (and the tests sdcompile scaffolds) on an emulated NPU, on CPU.

    pytest -p sdcompile.testing.pytest_plugin tests/compilation/patterns      # inside a MindIE-SD checkout
    pytest_plugins = ["sdcompile.testing.pytest_plugin"]                       # or from a conftest.py

At configure time — before any test module is imported, so before diffusers decides whether this is an NPU
host — it activates the device (`--sdcompile-device`, else $SDCOMPILE_DEVICE, else auto: the real NPU when
torch_npu and a device are present, the emulated one otherwise). When a target tree is found ($SDCOMPILE_REPO,
else the rootdir or a folder above it), `mindiesd.compilation` is made importable from it without running
the package's NPU-only `__init__`, so `from mindiesd.compilation import MindieSDBackend` works in test modules.

Fixtures: `npu_device` (DeviceInfo), `npu_tensor_device` (where test tensors go: "cpu" under emulation),
`mindiesd_target` (LoadedTarget), `pattern_session` (a factory: `with pattern_session("WanRmsNormPatternGroup")
as s: torch.compile(m, backend=s.backend())`, with only those groups enabled and upstream's state reset).
Tensors on `device="npu"` are not emulated: tests written for an NPU should take `npu_tensor_device`.
"""

from __future__ import annotations

import os

import pytest

_STATE: dict = {}


def pytest_addoption(parser) -> None:
    group = parser.getgroup("sdcompile", "sdcompile NPU device")
    group.addoption(
        "--sdcompile-device",
        action="store",
        default=None,
        choices=("auto", "emulated", "plain-cpu", "npu"),
        help="device mode for this test run (default: $SDCOMPILE_DEVICE, else auto)",
    )


def pytest_configure(config) -> None:
    from sdcompile.core.npu.device import ENV_MODE, activate
    from sdcompile.util.errors import SdcompileError

    mode = config.getoption("--sdcompile-device", default=None) or os.environ.get(ENV_MODE, "auto")
    try:
        _STATE["device"] = activate(mode)
    except SdcompileError as exc:
        raise pytest.UsageError(f"sdcompile: {exc.one_line()}") from exc
    _STATE["target"], _STATE["target_error"] = _load_target_if_any(config)


def _load_target_if_any(config):
    from sdcompile.core.target.discovery import ENV_VAR, find_target
    from sdcompile.core.target.loader import load_target
    from sdcompile.util.errors import NotATarget, SdcompileError

    try:
        tree = find_target(os.environ.get(ENV_VAR) or None, cwd=config.rootpath)
    except NotATarget as exc:
        if os.environ.get(ENV_VAR):  # asked for explicitly: a wrong path is an error, not "no target"
            raise pytest.UsageError(f"sdcompile: {exc.one_line()}") from exc
        return None, exc.one_line()
    try:
        return load_target(tree), None
    except SdcompileError as exc:
        raise pytest.UsageError(f"sdcompile: {exc.one_line()}") from exc


def pytest_report_header(config) -> list[str]:
    device = _STATE.get("device")
    if device is None:
        return []
    lines = [f"sdcompile device: {device.label} ({device.reason})"]
    target = _STATE.get("target")
    if target is not None:
        broken = [m.module for m in target.pattern_modules if not m.ok]
        lines.append(f"sdcompile target: {target.tree.root} ({target.package} package"
                     + (f"; {len(broken)} pattern module(s) failed to import" if broken else "") + ")")
    return lines


@pytest.fixture(scope="session")
def npu_device():
    from sdcompile.core.npu.device import current

    return current()


@pytest.fixture(scope="session")
def npu_tensor_device(npu_device) -> str:
    return npu_device.tensor_device


@pytest.fixture(scope="session")
def mindiesd_target():
    target = _STATE.get("target")
    if target is None:
        from sdcompile.core.target.loader import loaded_target

        target = loaded_target()
    if target is None:
        pytest.skip(f"no MindIE-SD target: {_STATE.get('target_error') or 'set SDCOMPILE_REPO'}")
    return target


@pytest.fixture
def pattern_session(mindiesd_target):
    """`pattern_session(*groups)` -> a CompileSession context manager with only those groups enabled."""

    def open_session(*groups: str):
        return mindiesd_target.session(groups)

    return open_session
