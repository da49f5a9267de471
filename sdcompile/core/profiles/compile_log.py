"""What a full-model run's log says: MindIE-SD's pattern-hit lines (layer 1) and whether the run completed
(layer 3).

MindieSDBackend's PatternMatchPass logs "PatternMatchPass replace N patterns." at DEBUG level once per compiled
graph (MINDIE_LOG_LEVEL=debug or the mindiesd logger at DEBUG), so a model with graph breaks logs several lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from sdcompile.core.target.pass_log import REPLACE_LINE
from sdcompile.util.errors import BadInput

# Signs that the process failed, checked line by line. The exception line ("RuntimeError: ...") says more than
# the "Traceback" line above it, so it is the one reported when both are there.
TRACEBACK = re.compile(r"^Traceback \(most recent call last\):")
FAILURE_LINES = (
    re.compile(r"^\s*(?:[\w.]+\.)?(?:[A-Z]\w*Error|Exception)(?::|$)"),
    re.compile(r"Segmentation fault|core dumped|Killed|out of memory|EZ\d{4}|EE\d{4}|EL\d{4}", re.IGNORECASE),
)


@dataclass(frozen=True)
class PatternHits:
    lines: int  # how many "PatternMatchPass replace N patterns." lines (one per compiled graph)
    total: int  # the sum of their N
    per_graph: tuple[int, ...]


@dataclass(frozen=True)
class RunOutcome:
    completed: bool | None  # True: the completion marker was found and no failure; False: a failure; None: unknown
    failure: str | None  # the first failure line, with its line number
    marker: str | None  # the completion marker looked for
    marker_line: str | None  # the line that matched it


@dataclass(frozen=True)
class CompileLog:
    path: str
    hits: PatternHits
    outcome: RunOutcome


def read_log(path: Path | str, done_marker: str | None = None) -> CompileLog:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError as exc:
        raise BadInput(f"log file {path} does not exist", "pass the log of the compiled full-model run") from exc
    except IsADirectoryError as exc:
        raise BadInput(f"{path} is a folder, not a log file", "pass the log file itself") from exc
    try:
        marker = re.compile(done_marker) if done_marker else None
    except re.error as exc:
        raise BadInput(f"--done-marker {done_marker!r} is not a regular expression ({exc})", "fix the pattern") \
            from exc
    hits: list[int] = []
    failure = marker_line = traceback = None
    for number, line in enumerate(text.splitlines(), start=1):
        m = REPLACE_LINE.search(line)
        if m:
            hits.append(int(m.group(1)))
            continue
        if traceback is None and TRACEBACK.search(line):
            traceback = f"line {number}: {line.strip()[:200]}"
        if failure is None and any(p.search(line) for p in FAILURE_LINES):
            failure = f"line {number}: {line.strip()[:200]}"
        if marker is not None and marker_line is None and marker.search(line):
            marker_line = f"line {number}: {line.strip()[:200]}"
    failure = failure or traceback
    if failure is not None:
        completed: bool | None = False
    elif marker is not None:
        completed = marker_line is not None
    else:
        completed = None
    return CompileLog(str(path), PatternHits(len(hits), sum(hits), tuple(hits)),
                      RunOutcome(completed, failure, done_marker, marker_line))
