"""The file `sdcompile capture` writes and `--model-capture` replays: a model's class, config and the inputs of its
first forward(s), recorded where the real pipeline runs.

The file is a zip archive:

    capture.json   {"format": "sdcompile-capture", "version": 1, "class": {"module", "qualname"}, "config": {...},
                    "calls": [{"arguments": {name: "Tensor[1, 4096, 64] bfloat16", ...}}], "versions": {...},
                    "created": ISO time, "device": "npu:0", "left_out": {name: type}}
    inputs.pt      torch.save([{name: value, ...}, ...]): each call's forward arguments by name, tensors on the CPU

capture.json is read without torch (what the workspace names the model after); inputs.pt with
`torch.load(weights_only=True)`, so replaying a capture runs no code from the file.
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sdcompile.util.errors import BadInput
from sdcompile.util.fsutil import atomic_write_bytes

FORMAT = "sdcompile-capture"
VERSION = 1
HEADER = "capture.json"
INPUTS = "inputs.pt"


@dataclass(frozen=True)
class CaptureHeader:
    module: str  # "diffusers.models.transformers.transformer_flux"
    qualname: str  # "FluxTransformer2DModel"
    config: dict[str, Any]
    calls: tuple[dict[str, str], ...]  # per call: argument -> what it was ("Tensor[1, 16, 64] bfloat16", "None")
    versions: dict[str, str | None]
    device: str
    created: str
    left_out: dict[str, str]  # arguments not kept (not tensors, numbers, strings or containers of them) -> type


def read_header(path: Path) -> CaptureHeader:
    """capture.json of `path`; BadInput naming the file when it is not a capture."""
    fix = "pass a file `sdcompile capture` wrote (or `with sdcompile.capture(PATH): ...`)"
    try:
        with zipfile.ZipFile(path) as archive:
            data = json.loads(archive.read(HEADER).decode("utf-8"))
    except (OSError, zipfile.BadZipFile, KeyError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadInput(f"--model-capture {path} is not a capture ({type(exc).__name__}: {exc})", fix) from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise BadInput(f"--model-capture {path} is not a capture (no {FORMAT!r} header)", fix)
    if data.get("version") != VERSION:
        raise BadInput(f"--model-capture {path} is capture version {data.get('version')!r}; this sdcompile reads "
                       f"version {VERSION}", "capture it again with this sdcompile")
    try:
        cls = data["class"]
        return CaptureHeader(str(cls["module"]), str(cls["qualname"]), dict(data["config"]),
                             tuple(dict(c["arguments"]) for c in data["calls"]), dict(data.get("versions", {})),
                             str(data.get("device", "")), str(data.get("created", "")), dict(data.get("left_out", {})))
    except (KeyError, TypeError, ValueError) as exc:
        raise BadInput(f"--model-capture {path}: capture.json lacks {exc}", fix) from exc


def read_inputs(path: Path, call: int = 0) -> dict[str, Any]:
    """The forward arguments of recorded call `call` (0: the first)."""
    import torch

    try:
        with zipfile.ZipFile(path) as archive:
            calls = torch.load(io.BytesIO(archive.read(INPUTS)), weights_only=True)
    except (OSError, zipfile.BadZipFile, KeyError, RuntimeError, ValueError) as exc:
        raise BadInput(f"--model-capture {path}: its inputs cannot be read ({type(exc).__name__}: {exc})",
                       "capture it again") from exc
    if not isinstance(calls, list) or not calls or not isinstance(calls[call], dict):
        raise BadInput(f"--model-capture {path} records no forward call", "capture it again")
    return calls[call]


def write(path: Path, module_name: str, qualname: str, config: dict[str, Any], calls: list[dict[str, Any]],
          versions: dict[str, str | None], device: str, created: str, left_out: dict[str, str]) -> None:
    """Write a capture atomically (a half-written file never replaces a good one)."""
    import torch

    header = {"format": FORMAT, "version": VERSION, "class": {"module": module_name, "qualname": qualname},
              "config": config, "calls": [{"arguments": {k: described(v) for k, v in c.items()}} for c in calls],
              "versions": versions, "device": device, "created": created, "left_out": left_out}
    tensors = io.BytesIO()
    torch.save(calls, tensors)
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr(HEADER, json.dumps(header, indent=2, default=_jsonable))
        zf.writestr(INPUTS, tensors.getvalue())
    atomic_write_bytes(path, archive.getvalue())


def described(value: Any) -> str:
    """One argument as people read it: `Tensor[1, 16, 64] bfloat16`, `None`, `list of 2`, `3.5`."""
    shape = getattr(value, "shape", None)
    if shape is not None and hasattr(value, "dtype"):
        return f"Tensor[{', '.join(str(int(d)) for d in shape)}] {str(value.dtype).removeprefix('torch.')}"
    if isinstance(value, (list, tuple)):
        return f"{type(value).__name__} of {len(value)}"
    if isinstance(value, dict):
        return f"dict of {len(value)}"
    return repr(value)[:80]


def _jsonable(value: Any) -> Any:
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return repr(value)
