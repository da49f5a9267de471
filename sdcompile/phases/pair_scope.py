"""The workspace pair a phase works in, and its lock held for the phase's whole run.

Every command that writes a pair's folder (`<workdir>/<model>/<op>/`) holds that pair's lock
(`workspace.locks.pair_lock`) while it works, so a second command on the same pair waits briefly and then exits 2
naming the first, before it has done any work; `run` holds it too and its phases re-enter it.

The pair is named as every command records it: the model's resolved name (a zoo entry's short name for its
diffusers class name too, a factory file's label) and the primitive (`RMSNorm`, `npu_rms_norm` -> `rmsnorm`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from sdcompile.core.ops import OPS, known_op
from sdcompile.core.profiles.catalog import load_catalog
from sdcompile.core.zoo.build_options import ModelBuild
from sdcompile.core.zoo.models import resolve_model
from sdcompile.util.input_checks import reading, writable_dir
from sdcompile.workspace.locks import pair_lock
from sdcompile.workspace.store import Workspace

F = TypeVar("F", bound=Callable)


def primitive_of(op: str | None) -> str | None:
    """The primitive `op` names (`rmsnorm`, `rope`, `adaln`, `gelu`), by name or kernel-catalog alias; None when
    it names none (the phase itself says what is wrong with it)."""

    return known_op(op)


def model_name(model: str | None, model_file: str | Path | None, build=None) -> str:
    """The pair's model word; BadInput (the phase's own error) for an unknown model or an unusable file."""

    return resolve_model(model, model_file, build).name


def build_of(arguments: dict):
    """The ModelBuild in a phase's arguments (`build`), or made from a command's own options (`size`, `config`,
    `num_layers`, `inputs`, `model_capture`); None when neither is there."""
    if arguments.get("build") is not None:
        return arguments["build"]
    names = ("size", "config", "num_layers", "inputs", "model_capture")
    if not any(arguments.get(n) is not None for n in names):
        return None

    size = arguments.get("size")
    return ModelBuild(size=getattr(size, "value", size), config=arguments.get("config"),
                      num_layers=arguments.get("num_layers"), inputs=arguments.get("inputs"),
                      capture=arguments.get("model_capture"))


def names_a_model(arguments: dict) -> bool:
    """Whether a phase's arguments name a model: --model, --model-file, --model-capture, or a --config's class."""
    build = build_of(arguments)
    return bool(arguments.get("model") or arguments.get("model_file")
                or (build is not None and (build.capture is not None or build.config is not None)))


@contextmanager
def holding_pairs(workdir: Path | str | None, model: str, ops: Iterable[str], *,
                  existing_only: bool = False) -> Iterator[None]:
    """Hold the locks of `model`'s pairs for `ops` (in one order, so two commands never wait on each other);
    `existing_only`: only pairs whose folder is there (another command can hold only those), creating none."""

    ws = Workspace(workdir)
    # a workspace it cannot write is the option's fault, said as such (of the path as given: a broken link is one)
    writable_dir(workdir or ws.root, "--workdir")
    with ExitStack() as stack:
        for op in sorted(set(ops)):
            folder = ws.pair_dir(model, op, create=False)
            if existing_only and not folder.is_dir():
                continue
            stack.enter_context(pair_lock(folder))
        yield


@dataclass(frozen=True)
class PairKey:
    model: str
    ops: tuple[str, ...]
    existing_only: bool = False  # hold only the pairs whose folder is there (analyze --op all)


def model_and_op(arguments: dict) -> PairKey | None:
    """The pair a phase named by `model`/`model_file` and `op` writes (none for a `dry_run`): `op="all"` holds every
    primitive's pair that exists; an op that names no primitive, or no model, holds nothing (the phase reports the
    bad input itself)."""

    if arguments.get("dry_run"):
        return None  # a preview records nothing, so it neither waits for nor keeps out another command
    op = arguments.get("op")
    every = isinstance(op, str) and op.strip().lower() == "all"
    ops = OPS if every else tuple(filter(None, [primitive_of(op)]))
    if not ops or not names_a_model(arguments):
        return None
    return PairKey(model_name(arguments.get("model"), arguments.get("model_file"), build_of(arguments)), ops, every)


def recorded_pair(arguments: dict) -> PairKey | None:
    """The pair integrate and copy-audit record their verdict in: their `record_as` (model, op), when given."""
    pair = arguments.get("record_as")
    return PairKey(pair[0], (pair[1],)) if pair else None


def record_key(model: str | None, model_file: str | Path | None, op: str,
               catalog_file: Path | None = None, build=None) -> tuple[str, str]:
    """(model name, op name) a profile phase records under: `FluxTransformer2DModel --op RMSNorm` is flux/rmsnorm,
    the pair every other command of that model and op uses."""

    with reading(catalog_file, "--catalog"):
        catalog = load_catalog(catalog_file)
    return model_name(model, model_file, build), catalog.resolve_op(op).name


def holds_pair(key: Callable[[dict], PairKey | None] = model_and_op) -> Callable[[F], F]:
    """Decorate a phase so that each call holds the lock of the pair `key(<its arguments by name>)` names, from
    before any work to the last record (`workdir` picks the workspace)."""

    def decorate(fn: F) -> F:
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            given = signature.bind(*args, **kwargs)
            given.apply_defaults()
            pair = key(given.arguments)
            if pair is None:
                return fn(*args, **kwargs)
            with holding_pairs(given.arguments.get("workdir"), pair.model, pair.ops,
                               existing_only=pair.existing_only):
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


@contextmanager
def writing_pair(pair_dir: Path | None) -> Iterator[None]:
    """Hold the lock of the pair folder `pair_dir` (None: hold nothing) for the block: for writes whose pair is
    known only once the phase has run (analyze --op all, debug --group without --op); re-entrant."""

    if pair_dir is None:
        yield
        return
    with pair_lock(pair_dir):
        yield
