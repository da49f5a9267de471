"""The workspace's JSON artifacts: each is written with a top-level `schema_version` by `write_artifact` and read
back by `read_artifact`, which checks that version and the fields its readers use.

A file this sdcompile cannot read is exit 2 naming the file and the field or the version, with the command that
rewrites it; never a KeyError deep in a reader. An artifact an older sdcompile wrote has no `schema_version`: it is
read as version 0 and refused, except state.json and run.json (see `Artifact.unversioned`).

When an artifact's shape changes, bump its `version` here (readers then refuse the files older sdcompiles wrote,
naming the command that rewrites them) and note it in docs/changes.md.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sdcompile.util.errors import BadInput
from sdcompile.util.fsutil import atomic_write_text
from sdcompile.util.serialize import to_jsonable

SCHEMA_KEY = "schema_version"


@dataclass(frozen=True)
class Artifact:
    """One kind of artifact: its file name, the version this sdcompile writes and reads, and what its readers use."""

    file: str  # the file's name in its folder
    version: int
    title: str  # what messages call it: "<path> is not <title> (...)"
    fix: str  # what to do about a file this sdcompile cannot read (usually: the command that rewrites it)
    # Fields readers use: a dotted path -> a JSON type of `JSON_TYPES`. A trailing "?" on the path: optional (checked
    # when present and not null); a child ("log.hits") is checked only when its parent is present and not null.
    fields: Mapping[str, str] = field(default_factory=dict)
    unversioned: int = 0  # the version a file without schema_version is read as


def _rerun(command: str) -> str:
    return f"rerun `sdcompile {command}` for this model and op: it rewrites the file"


# Decision: state.json and run.json without schema_version are read as version 1 when their shape is valid. Both
# hold what users' existing workspaces remember (every phase's verdict; what `sdcompile run` may keep) and had
# this shape before versions were written; refusing them would reset workspaces that are still right.
ARTIFACTS: dict[str, Artifact] = {
    "analysis": Artifact("analysis.json", 2, "an analysis record", _rerun("analyze"),
                         {"dtype": "string", "device": "string", "analysis": "object",
                          "analysis.implementations": "array", "analysis.unexercised?": "array"}),
    "scaffold": Artifact("scaffold.json", 2, "a scaffold record", _rerun("scaffold"),
                         {"decision": "string", "sites": "array", "files": "array", "variants?": "array",
                          "names?": "object"}),
    "register": Artifact("register.json", 1, "a register record", _rerun("register")),
    "verify": Artifact("verify.json", 1, "a verify report", _rerun("verify")),
    "debug": Artifact("debug.json", 1, "a debug report", _rerun("debug")),
    "metadata": Artifact("metadata.json", 1, "debug's metadata", _rerun("debug")),
    "integrate": Artifact("integrate.json", 1, "an integrate record", _rerun("integrate"),
                          {"model_compile?": "object", "model_compile.replacements": "integer", "log?": "object",
                           "log.hits": "object", "log.hits.lines": "integer", "log.hits.total": "integer"}),
    "benefit": Artifact("benefit.json", 1, "a benefit record", _rerun("benefit")),
    "copy-audit": Artifact("copy-audit.json", 1, "a copy-audit record", _rerun("copy-audit")),
    "run": Artifact("run.json", 1, "a run record", "delete it (the next run then runs every phase again)",
                    {"phases": "object"}, unversioned=1),
    "run-result": Artifact("run-result.json", 1, "a run result", _rerun("run")),
    "capture": Artifact("capture.json", 1, "a graph capture summary",
                        "rerun the command that captured those graphs (e.g. `sdcompile analyze`)",
                        {"metadata": "object", "graphs": "array"}),
    "state": Artifact("state.json", 1, "a valid sdcompile state file", "delete it to reset that pair's state",
                      {"model": "string", "op": "string", "phases?": "object"}, unversioned=1),
}

JSON_TYPES: dict[str, tuple[str, Any]] = {
    "string": ("a string", lambda v: isinstance(v, str)),
    "integer": ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    "number": ("a number", lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)),
    "boolean": ("a boolean", lambda v: isinstance(v, bool)),
    "array": ("an array", lambda v: isinstance(v, list)),
    "object": ("an object", lambda v: isinstance(v, dict)),
    "null": ("null", lambda v: v is None),
}


class ArtifactError(BadInput):
    """A workspace artifact this sdcompile cannot read: the file, and the field or version that is wrong (exit 2)."""


class ArtifactUnreadable(ArtifactError, ValueError):
    """An artifact that is not JSON at all (e.g. cut short). Also a ValueError, as json's own error is: readers that
    treat a cut-short file as absent (rerun the phase that writes it, keep nothing) go on doing so."""


def artifact_text(kind: str, content: Any) -> str:
    """`content` (a result dataclass or a dict) as the artifact's JSON text, `schema_version` first."""
    doc = to_jsonable(content)
    if not isinstance(doc, dict):
        raise TypeError(f"a {kind} artifact is a JSON object, not {type(doc).__name__}")
    body = {k: v for k, v in doc.items() if k != SCHEMA_KEY}
    return json.dumps({SCHEMA_KEY: ARTIFACTS[kind].version, **body}, indent=2, ensure_ascii=False, default=str) + "\n"


def write_artifact(kind: str, path: Path | str, content: Any) -> Path:
    """Write `content` to `path` (atomically) as the current version of artifact `kind`; returns the path."""
    path = Path(path)
    if path.name != ARTIFACTS[kind].file:
        raise ValueError(f"a {kind} artifact is written to {ARTIFACTS[kind].file}, not {path.name}")
    atomic_write_text(path, artifact_text(kind, content))
    return path


def read_artifact(kind: str, path: Path | str) -> dict[str, Any]:
    """The artifact at `path`, checked: ArtifactError naming the file and the version or field when this sdcompile
    cannot read it (ArtifactUnreadable when it is not JSON). A missing file raises FileNotFoundError, as open does:
    whether that is an error is the reader's decision."""
    spec, path = ARTIFACTS[kind], Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise
    except UnicodeDecodeError as exc:  # a ValueError too: read like a file cut short
        raise ArtifactUnreadable(f"{path} is not {spec.title} (not UTF-8 text: {exc.reason})", spec.fix) from exc
    except ValueError as exc:
        raise ArtifactUnreadable(f"{path} is not {spec.title} (not valid JSON: {exc})", spec.fix) from exc
    except OSError as exc:  # a folder or a device where the file belongs, no permission
        raise ArtifactError(f"{path} cannot be read as {spec.title}: {exc.strerror or exc}", spec.fix) from exc
    if not isinstance(doc, dict):
        raise ArtifactError(f"{path} is not {spec.title} ({_kind_of(doc)} where a JSON object belongs)", spec.fix)
    _check_version(doc, spec, path)
    for name, type_name in spec.fields.items():
        _check_field(doc, name, type_name, spec, path)
    return doc


def _check_version(doc: dict[str, Any], spec: Artifact, path: Path) -> None:
    found = doc.get(SCHEMA_KEY, spec.unversioned)
    if not JSON_TYPES["integer"][1](found):
        raise ArtifactError(f'{path}: "{SCHEMA_KEY}" is {_kind_of(found)}, where an integer belongs', spec.fix)
    if found == spec.version:
        return
    newer = found > spec.version
    written = "" if SCHEMA_KEY in doc else " (it has none)"
    raise ArtifactError(f"{path}: {SCHEMA_KEY} {found}{written}, this sdcompile reads {spec.version}: "
                        f"{'a newer' if newer else 'an older'} sdcompile wrote it",
                        f"upgrade sdcompile to read it, or {spec.fix}" if newer else spec.fix)


def _check_field(doc: dict[str, Any], name: str, type_name: str, spec: Artifact, path: Path) -> None:
    optional = name.endswith("?")
    *parents, last = name.removesuffix("?").split(".")
    table: Any = doc
    for parent in parents:  # a child is checked only where its parent is there
        table = table.get(parent) if isinstance(table, dict) else None
        if table is None:
            return
    dotted = name.removesuffix("?")
    if not isinstance(table, dict):
        return  # the parent's own entry reports its type
    if last not in table or (optional and table[last] is None):
        if not optional:
            raise ArtifactError(f'{path} is not {spec.title}: it has no "{dotted}" ({JSON_TYPES[type_name][0]})',
                                spec.fix)
        return
    noun, ok = JSON_TYPES[type_name]
    if not ok(table[last]):
        raise ArtifactError(f'{path} is not {spec.title}: its "{dotted}" is {_kind_of(table[last])}, where {noun} '
                            "belongs", spec.fix)


def _kind_of(value: Any) -> str:
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if JSON_TYPES[name][1](value):
            return JSON_TYPES[name][0]
    return f"a {type(value).__name__}"
