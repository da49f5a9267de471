"""Probe this machine's NPU stack by features, not version strings.

Cheap when torch_npu is absent: `find_spec` answers without importing torch, so `sdcompile backends`
stays fast on CPU machines. When torch_npu is present the probes import it (that is the only way to know
whether a device is usable). The emulated stand-in never counts: probes ignore sdcompile's own torch_npu.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass


@dataclass(frozen=True)
class Probe:
    name: str
    ok: bool
    detail: str


def _real_torch_npu_spec():
    from sdcompile.core.npu.device import real_torch_npu_spec

    return real_torch_npu_spec()


def probe_all() -> dict[str, Probe]:
    probes: dict[str, Probe] = {}
    spec = _real_torch_npu_spec()
    if spec is None:
        probes["torch_npu"] = Probe("torch_npu", False, "torch_npu is not installed")
        for name in ("npu_device", "npu_graph", "torchair", "npugraph_ex_backend"):
            probes[name] = Probe(name, False, "needs torch_npu, which is not installed")
        return probes

    try:
        import torch
        import torch_npu  # noqa: F401
    except Exception as exc:  # a broken install: report it, never crash the probe
        probes["torch_npu"] = Probe("torch_npu", False, f"torch_npu is installed but fails to import: {exc}")
        for name in ("npu_device", "npu_graph", "torchair", "npugraph_ex_backend"):
            probes[name] = Probe(name, False, "torch_npu fails to import")
        return probes
    probes["torch_npu"] = Probe("torch_npu", True, f"torch_npu importable from {spec.origin}")

    try:
        available = bool(torch.npu.is_available())
        count = torch.npu.device_count() if available else 0
        probes["npu_device"] = Probe(
            "npu_device", available, f"{count} NPU device(s)" if available else "torch.npu.is_available() is False"
        )
    except Exception as exc:
        probes["npu_device"] = Probe("npu_device", False, f"torch.npu.is_available() raised {exc}")

    has_graph = hasattr(getattr(torch, "npu", None), "NPUGraph")
    probes["npu_graph"] = Probe("npu_graph", has_graph, "torch.npu.NPUGraph " + ("present" if has_graph else "absent"))

    torchair_detail = "neither `import torchair` nor `torch_npu.dynamo.torchair` works"
    torchair_ok = False
    for module in ("torchair", "torch_npu.dynamo.torchair"):
        try:
            importlib.import_module(module)
            torchair_ok, torchair_detail = True, f"`import {module}` works"
            break
        except Exception:
            continue
    probes["torchair"] = Probe("torchair", torchair_ok, torchair_detail)

    try:
        from sdcompile.core.torchcompat.dynamo import list_backends

        backends = list_backends()
        ok = "npugraph_ex" in backends
        probes["npugraph_ex_backend"] = Probe(
            "npugraph_ex_backend", ok, "'npugraph_ex' " + ("is" if ok else "is not") + " a registered dynamo backend"
        )
    except Exception as exc:
        probes["npugraph_ex_backend"] = Probe(
            "npugraph_ex_backend", False, f"torch._dynamo.list_backends() raised {exc}"
        )
    return probes
