"""Workspace layout and lifecycle state.

    <workdir>/                      .sdcompile/ in the current folder unless --workdir / $SDCOMPILE_WORKDIR
      <model>/<op>/state.json       {"schema_version", "model", "op", "phases": {"analyze": PhaseRecord, ...}}
      <model>/<op>/...              that pair's artifacts (analysis.json, snippets/, graphs/, reports)

Each state.json is rewritten atomically under a lock (state.json.lock beside it), so an interrupted command never
leaves a half-written state and two commands recording phases of one pair at once both land.
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from sdcompile.util.errors import BadInput
from sdcompile.workspace.artifacts import read_artifact, write_artifact
from sdcompile.workspace.phases import PHASE_NUMBER, PHASES, VERDICTS

DEFAULT_DIRNAME = ".sdcompile"
ENV_VAR = "SDCOMPILE_WORKDIR"
STATE_FILE = "state.json"
LOCK_TIMEOUT = 60.0  # seconds; a state write takes milliseconds
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def safe_name(label: str) -> str:
    """A folder name for a model or op label (`my_model.py:build` -> `my_model.py-build`)."""
    from sdcompile.util.input_checks import check_name_length

    name = _SAFE.sub("-", label).strip("-.")
    if not name:
        raise BadInput(f"{label!r} cannot name a workspace folder", "use letters, digits, '_', '-' or '.'")
    return check_name_length(name, "the workspace folder name")


@dataclass(frozen=True)
class PhaseRecord:
    phase: str
    number: int
    verdict: str
    when: str  # ISO 8601, UTC
    device: str  # "npu", "cpu (emulated npu)", "cpu" or "n/a" for phases that run no model
    summary: str
    evidence: tuple[str, ...] = ()  # paths relative to the workspace root

    def __post_init__(self) -> None:
        # a record read back from a state file someone edited: every field its type, the verdict one of VERDICTS
        for name, kind in (("phase", str), ("number", int), ("verdict", str), ("when", str), ("device", str),
                           ("summary", str)):
            if not isinstance(getattr(self, name), kind) or isinstance(getattr(self, name), bool):
                raise ValueError(f"{self.phase!r}'s {name} is not {'an integer' if kind is int else 'a string'}")
        if self.verdict not in VERDICTS:
            raise ValueError(f"{self.phase!r}'s verdict {self.verdict!r} is not one of {', '.join(VERDICTS)}")
        if not all(isinstance(e, str) for e in self.evidence):
            raise ValueError(f"{self.phase!r}'s evidence is not a list of paths")


@dataclass(frozen=True)
class PairState:
    model: str
    op: str
    folder: str  # relative to the workspace root
    phases: dict[str, PhaseRecord] = field(default_factory=dict)

    def next_phase(self) -> str | None:
        """The first phase without a passing record (register is not one when scaffold found nothing to generate:
        its `info` is a reuse or an already fused op, with nothing to register)."""
        scaffold = self.phases.get("scaffold")
        for name in PHASES:
            record = self.phases.get(name)
            if name == "register" and record is None and scaffold is not None and scaffold.verdict == "info":
                continue
            if record is None or record.verdict == "fail":
                return name
        return None


def resolve_workdir(workdir: Path | str | None = None) -> Path:
    if workdir:
        return Path(workdir).resolve()
    env = os.environ.get(ENV_VAR)
    return Path(env).resolve() if env else (Path.cwd() / DEFAULT_DIRNAME).resolve()


class Workspace:
    def __init__(self, root: Path | str | None = None):
        self.root = resolve_workdir(root)

    def pair_dir(self, model: str, op: str, create: bool = True) -> Path:
        folder = self.root / safe_name(model) / safe_name(op)
        if create:
            folder.mkdir(parents=True, exist_ok=True)
        return folder

    def relative(self, path: Path) -> str:
        path = Path(path).resolve()
        try:
            return str(path.relative_to(self.root))
        except ValueError:
            return str(path)

    def record(
        self,
        model: str,
        op: str,
        phase: str,
        verdict: str,
        summary: str,
        device: str = "n/a",
        evidence: list[Path] | tuple[Path, ...] = (),
    ) -> PhaseRecord:
        """Record a phase's outcome for a model/op pair (replaces that phase's previous record)."""
        if phase not in PHASE_NUMBER:
            raise ValueError(f"unknown phase {phase!r}; phases are {PHASES}")
        if verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {verdict!r}; verdicts are {VERDICTS}")
        rec = PhaseRecord(
            phase=phase,
            number=PHASE_NUMBER[phase],
            verdict=verdict,
            when=datetime.now(UTC).isoformat(timespec="seconds"),
            device=device,
            summary=summary,
            evidence=tuple(self.relative(Path(p)) for p in evidence),
        )
        from filelock import FileLock, Timeout

        state_file = self.pair_dir(model, op) / STATE_FILE
        # Read-modify-write under a lock: two commands recording phases of one pair at once both land.
        try:
            with FileLock(state_file.with_name(STATE_FILE + ".lock"), timeout=LOCK_TIMEOUT, is_singleton=True):
                state = self.load_pair(model, op)
                phases = dict(state.phases) if state else {}
                phases[phase] = rec
                payload = {"model": model, "op": op, "phases": {k: asdict(v) for k, v in phases.items()}}
                write_artifact("state", state_file, payload)
        except Timeout:
            raise BadInput(f"{state_file} stayed locked by another sdcompile command for {LOCK_TIMEOUT:.0f}s",
                           "wait for it to finish and run again") from None
        return rec

    def load_pair(self, model: str, op: str) -> PairState | None:
        return self._load(self.pair_dir(model, op, create=False) / STATE_FILE)

    def _load(self, state_file: Path) -> PairState | None:
        fix = "delete it to reset that pair's state"
        if state_file.exists() and not state_file.is_file():
            raise BadInput(f"{state_file} is not a file (sdcompile keeps that pair's state there)", fix)
        if not state_file.is_file():
            return None
        data = read_artifact("state", state_file)  # names the file and the field it cannot read (exit 2)
        try:
            phases = {
                name: PhaseRecord(**{**rec, "evidence": tuple(rec.get("evidence", ()))})
                for name, rec in data.get("phases", {}).items()
            }
            return PairState(
                model=data["model"], op=data["op"], folder=self.relative(state_file.parent), phases=phases
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise BadInput(f"{state_file} is not a valid sdcompile state file ({exc})", fix) from exc

    def pairs(self) -> list[PairState]:
        if not self.root.is_dir():
            return []
        found = [self._load(p) for p in sorted(self.root.glob(f"*/*/{STATE_FILE}"))]
        return [p for p in found if p is not None]
