"""The one way every renderer names the versions a result was made with (phases.environment.Versions)."""

from __future__ import annotations

from typing import Any

EMULATED_LOCAL = "+sdcompile.emulated"  # the emulated torch_npu's local label; "(emulated)" says it in prose


def torch_npu_text(v: Any) -> str:
    """"torch_npu 2.9.0 (emulated; behaviours: none)", "torch_npu 2.9.0.post1 (real)", ..."""
    if v.torch_npu_version is None:
        return "torch_npu none (plain CPU; the target's fused ops emulated)" if v.torch_npu_emulated else \
            "torch_npu none"
    if not v.torch_npu_emulated:
        return f"torch_npu {v.torch_npu_version} (real)"
    behaviours = ", ".join(v.npu_behaviours) or "none"
    return f"torch_npu {v.torch_npu_version.removesuffix(EMULATED_LOCAL)} (emulated; behaviours: {behaviours})"


def versions_line(v: Any, target: bool = True) -> str:
    """One line: torch, torch_npu, diffusers, MindIE-SD (when `target`), Python. `v` is a Versions (or a result
    extending it)."""
    parts = [f"torch {v.torch_version or 'not installed'}", torch_npu_text(v),
             f"diffusers {v.diffusers_version or 'not installed'}"]
    if target:
        parts.append(f"MindIE-SD {v.target_version or 'no tree'}")
    parts.append(f"Python {v.python}")
    return " · ".join(parts)
