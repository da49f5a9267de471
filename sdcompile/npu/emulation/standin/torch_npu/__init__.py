"""sdcompile's emulated torch_npu — NOT Huawei's torch_npu.

Exposes the fused NPU ops of sdcompile's catalog (`sdcompile/catalogs/fused_ops.toml`) as torch.library
custom ops with CPU reference kernels, under the names torch_npu uses (`torch_npu.npu_rms_norm` is
`torch.ops.npu.npu_rms_norm`). It is on sys.path only in a process where `sdcompile.npu.device.activate()`
chose emulation.
"""

import torch as _torch

from sdcompile.npu.emulation import install_fused_ops as _install_fused_ops
from sdcompile.npu.emulation import install_torch_npu_namespace as _install_namespace
from sdcompile.npu.emulation.ops import emulated_device_facts as _facts
from sdcompile.npu.emulation.ops import fused_op_table as _table

_install_fused_ops()
_install_namespace()

__version__ = _facts()["torch_npu_version"]
npu = _torch.npu



def _bind_exposed_ops() -> None:
    for op in _table():
        for attr in op.exposed_as:
            globals()[attr] = getattr(getattr(_torch.ops, op.namespace), op.op_name)


_bind_exposed_ops()
