"""sdcompile's emulated torch_npu — NOT Huawei's torch_npu.

Exposes the fused NPU ops of sdcompile's catalog (`sdcompile/catalogs/fused_ops.toml`) as torch.library
custom ops with CPU reference kernels, under the names torch_npu uses (`torch_npu.npu_rms_norm` is
`torch.ops.npu.npu_rms_norm`). It is on sys.path only in a process where `sdcompile.core.npu.device.activate()`
chose emulation. Its version, and the behaviour set that goes with it, follow the installed torch.
"""

import torch as _torch

from sdcompile.core.npu.emulation import install_fused_ops as _install_fused_ops
from sdcompile.core.npu.emulation import install_torch_npu_namespace as _install_namespace
from sdcompile.core.npu.emulation.behaviours import emulated_torch_npu_version as _version
from sdcompile.core.npu.emulation.ops import fused_op_table as _table

_install_fused_ops()
_install_namespace()

__version__ = _version()  # the torch_npu paired with the installed torch: "2.9.0+sdcompile.emulated"
npu = _torch.npu


def _bind_exposed_ops() -> None:
    for op in _table():
        if not op.emulated:
            continue
        for attr in op.exposed_as:
            globals()[attr] = getattr(getattr(_torch.ops, op.namespace), op.op_name)


_bind_exposed_ops()
