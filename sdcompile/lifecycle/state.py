"""What `sdcompile run` remembers between runs, so it resumes where it stopped: `<pair>/run/run.json`.

For every phase the run completed it keeps a fingerprint of the inputs that phase depended on, the `when` of the
workspace record it made, and a hash of the target's compilation sources at that time. On the next run a phase is
kept (not run again) only when all three still agree:

- the inputs are the same (model, op, dtype, device mode, names, thresholds, tool and library versions);
- the workspace record is still the one the run made (a phase run by hand since then is run again);
- for the phases that read the target (verify, debug, integrate, copy-audit), its sources are unchanged — editing a
  pattern after a failed debug re-runs phases 4-7. Scaffold and register are the phases that *make* those edits,
  so a changed tree does not undo them.

The first phase that is not kept, and every phase after it, runs again.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from sdcompile.lifecycle.options import RunOptions
from sdcompile.util.errors import BadInput
from sdcompile.workspace.artifacts import read_artifact, write_artifact

RUN_FILE = "run.json"
# Phases whose result depends on the target tree as it is when they run (not on edits they make themselves).
TREE_READERS = ("verify", "debug", "integrate", "copy-audit")

# Which RunOptions fields each phase's outcome depends on (the fingerprint holds only these): a threshold changed
# for copy-audit re-runs copy-audit only.
_PHASE_FIELDS = {
    "analyze": ("model", "model_file", "op", "dtype", "plain_cpu"),
    "scaffold": ("model", "model_file", "op", "dtype", "plain_cpu", "name", "path", "target"),
    "register": ("model", "model_file", "op", "dtype", "plain_cpu", "name", "path", "target"),
    "verify": ("model", "model_file", "op", "dtype", "plain_cpu", "name", "path", "target", "min_cosine"),
    "debug": ("model", "model_file", "op", "dtype", "plain_cpu", "name", "path", "target"),
    "integrate": ("model", "model_file", "op", "dtype", "plain_cpu", "name", "path", "target", "min_cosine"),
    "copy-audit": ("model", "model_file", "op", "dtype", "plain_cpu", "name", "path", "target", "max_inflation"),
}


def _versions() -> dict[str, str | None]:
    out = {}
    for dist in ("sdcompile", "torch", "diffusers"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = None
    return out


def phase_fingerprint(phase: str, options: RunOptions) -> str:
    chosen = {key: getattr(options, key) for key in _PHASE_FIELDS[phase]}
    if options.build.given:  # what the model is built from (file contents included); absent at the default build
        chosen["build"] = options.build.fingerprint()
    if options.model_file:  # a model file is code: its content is an input too
        path = Path(options.model_file.rpartition(":")[0] or options.model_file)
        chosen["model_file_sha"] = _sha(path.read_bytes()) if path.is_file() else "missing"
    payload = json.dumps({"phase": phase, "inputs": chosen, "versions": _versions()}, sort_keys=True)
    return _sha(payload.encode())


def tree_hash(compilation: Path) -> str:
    """A hash of the target's compilation sources (every .py file's path and bytes)."""
    digest = hashlib.sha256()
    for path in sorted(compilation.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        digest.update(str(path.relative_to(compilation)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


@dataclass(frozen=True)
class KeptPhase:
    fingerprint: str
    when: str  # the `when` of the workspace record the run made
    tree: str  # tree_hash when the phase ran
    seconds: float | None = None  # how long it took then (None: recorded by an older sdcompile)


class RunMemory:
    """`<pair>/run/run.json`: the phases the last runs completed, per phase."""

    def __init__(self, folder: Path):
        self.path = Path(folder) / RUN_FILE
        self.phases: dict[str, KeptPhase] = {}
        fix = "delete it (the next run then runs every phase again)"
        if self.path.exists() and not self.path.is_file():
            raise BadInput(f"{self.path} is not a file (sdcompile run remembers its phases there)", fix)
        if not self.path.is_file():
            return
        try:
            data = read_artifact("run", self.path)
        except ValueError:
            return  # unreadable (cut short): nothing is kept, every phase runs again
        phases = data.get("phases") if isinstance(data, dict) else None
        if not isinstance(phases, dict) or not all(isinstance(v, dict) for v in phases.values()):
            # valid JSON of another shape: something else wrote it, so it is not silently replaced
            raise BadInput(f"{self.path} is not a run record (a JSON {type(data).__name__} without a phases object)",
                           fix)
        try:
            self.phases = {k: KeptPhase(**v) for k, v in phases.items()}
        except TypeError:
            self.phases = {}  # records of another sdcompile version: nothing is kept, every phase runs again

    def remember(self, phase: str, kept: KeptPhase) -> None:
        self.phases[phase] = kept
        self._save()

    def forget_from(self, phases: tuple[str, ...]) -> None:
        for phase in phases:
            self.phases.pop(phase, None)
        self._save()

    def clear(self) -> None:
        self.phases = {}
        self._save()

    def _save(self) -> None:
        payload = {"phases": {k: asdict(v) for k, v in self.phases.items()}}
        write_artifact("run", self.path, payload)
