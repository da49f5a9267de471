"""Helpers for tests that need a fresh process (a device mode is decided once per process)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

# A stand-in for a REAL Ascend stack (this machine has none): a torch_npu package outside sdcompile, with a
# dist-info, whose import installs a torch.npu that reports `available` devices and the fused ops (borrowed from
# sdcompile's CPU kernels, registered under the real namespaces as the real torch_npu would).
FAKE_REAL_TORCH_NPU = '''
import types, torch
from sdcompile.core.npu.emulation.ops import register_ops, fused_op_table
register_ops(("npu",))
_ns = types.ModuleType("torch.npu")
_ns.is_available = lambda: {available}
_ns.device_count = lambda: 2
_ns.current_device = lambda: 0
_ns.synchronize = lambda device=None: None
torch.npu = _ns
import sys as _sys
_sys.modules["torch.npu"] = _ns
__version__ = "2.13.0.post1"
for _op in fused_op_table():
    for _attr in _op.exposed_as:
        globals()[_attr] = getattr(getattr(torch.ops, _op.namespace), _op.op_name)
'''


def make_fake_real_stack(folder: Path, available: bool = True) -> Path:
    pkg = folder / "torch_npu"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(FAKE_REAL_TORCH_NPU.format(available=available))
    dist = folder / "torch_npu-2.13.0.post1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: torch_npu\nVersion: 2.13.0.post1\n")
    (dist / "top_level.txt").write_text("torch_npu\n")
    return folder


def run_python(code: str, env: dict | None = None, cwd: Path | None = None, timeout: float = 300):
    full_env = {k: v for k, v in os.environ.items() if k not in ("SDCOMPILE_DEVICE", "PYTHONPATH")}
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=full_env, cwd=cwd or REPO_ROOT, timeout=timeout)
