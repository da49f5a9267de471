"""Shared helpers of the register tests (importable by name: this folder is on sys.path under pytest)."""

from __future__ import annotations

import subprocess
from pathlib import Path

COMPILATION = Path("mindiesd/compilation")
PATTERNS_INIT = COMPILATION / "patterns/__init__.py"
PASSES_INIT = COMPILATION / "passes/__init__.py"
CONFIG = COMPILATION / "compiliation_config.py"
REGISTRATION_FILES = (PATTERNS_INIT, PASSES_INIT, CONFIG)

# A pattern module written the way upstream writes them (factory + closure, group list at the end); register only
# reads it statically, so it needs to parse and define the group.
FLUX_RMSNORM_PATTERN = '''\
"""Flux RMSNorm (torch.nn.RMSNorm on q/k) -> npu_rms_norm."""

import torch

from ..passes.register_pattern_to_pass import PatternBase


def create(dtype, epsilon=1e-6):
    class FluxRmsNormPattern(PatternBase):
        @staticmethod
        def name():
            return __class__.__name__ + f"-{dtype}"

        @staticmethod
        def inputs():
            x = torch.empty(1, 24, 16, 128, dtype=dtype, device="meta")
            weight = torch.empty(128, dtype=dtype, device="meta")
            return [x, weight]

        @staticmethod
        def pattern(x, weight):
            def func(x, weight):
                return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, epsilon)

            return func(x, weight)

        @staticmethod
        def replacement(x, weight):
            def func(x, weight):
                return torch.ops.npu.npu_rms_norm(x, weight, epsilon)[0]

            return func(x, weight)

    return FluxRmsNormPattern


FluxRmsNormPatternGroup = [create(torch.bfloat16), create(torch.float32)]
'''


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=root, check=True, capture_output=True, text=True,
    ).stdout


def write_pattern(root: Path, module: str, text: str) -> Path:
    path = root / COMPILATION / "patterns" / f"{module}.py"
    path.write_text(text, encoding="utf-8")
    return path


def snapshot(root: Path) -> dict[Path, bytes]:
    return {rel: (root / rel).read_bytes() for rel in REGISTRATION_FILES}
