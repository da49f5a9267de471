"""The commands `sdcompile run` prints: each phase on its own and the next step after a failed gate, spelled with
the run's own options so they can be pasted as they are (paths relative to the current folder when inside it).
Each is an sdcompile.util.command_line.SdcompileCommand: the one place option order and quoting are decided."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from sdcompile.lifecycle.options import DEFAULT_DTYPE, DEFAULT_MAX_INFLATION, DEFAULT_MIN_COSINE, RunOptions
from sdcompile.util.command_line import SdcompileCommand, shown_path

__all__ = ["Commands", "shown_path"]


@dataclass(frozen=True)
class Commands:
    """The commands, built from the run's options (a threshold at its default is left out, as a user would)."""

    options: RunOptions

    # ---------------------------------------------------------------------------------------------- pieces
    def _base(self, command: str, *positional, op: str | None = None, comment: str = "", repo: bool = True,
              **fields) -> str:
        """`command` with the model, dtype, device, timeout and workspace of the run, on the run's tree."""
        o = self.options
        cmd = SdcompileCommand(
            command, tuple(positional), model=o.model, model_file=None if o.model else o.model_file,
            build=o.build.options(), op=op or o.op, dtype=o.dtype if o.dtype != DEFAULT_DTYPE else None,
            plain_cpu=o.plain_cpu, timeout=o.timeout, repo=Path(o.target) if repo else None, workdir=o.workdir,
            comment=comment)
        return str(replace(cmd, **fields))

    @property
    def _cosine(self) -> float | None:
        cosine = self.options.min_cosine
        return cosine if cosine != DEFAULT_MIN_COSINE else None

    # --------------------------------------------------------------------------------------------- commands
    def run(self, path: str | None = None, preview: bool | None = None, comment: str = "") -> str:
        o = self.options
        chosen = path or o.path
        return str(SdcompileCommand(
            "run", model=o.model, model_file=None if o.model else o.model_file, build=o.build.options(), op=o.op,
            name=o.name,
            dtype=o.dtype if o.dtype != DEFAULT_DTYPE else None, plain_cpu=o.plain_cpu,
            path=chosen if chosen != "auto" else None, min_cosine=self._cosine,
            max_inflation=o.max_inflation if o.max_inflation != DEFAULT_MAX_INFLATION else None, timeout=o.timeout,
            flags=("--dry-run",) if (o.dry_run if preview is None else preview) else (), repo=o.user_repo,
            workdir=o.workdir, comment=comment))

    def analyze(self, op: str | None = None, comment: str = "") -> str:
        return self._base("analyze", op=op, repo=False, comment=comment)

    def scaffold(self, flags: tuple[str, ...] = (), comment: str = "") -> str:
        o = self.options
        return self._base("scaffold", name=o.name, path=o.path if o.path != "auto" else None, flags=flags,
                          comment=comment)

    def register(self, word: str, options: tuple[tuple[str, str], ...] = ()) -> str:
        o = self.options
        return str(SdcompileCommand("register", model=word, op=o.op, options=options, repo=Path(o.target),
                                    workdir=o.workdir))

    def register_check(self) -> str:
        return str(SdcompileCommand("register", flags=("--check", "--import"), repo=Path(self.options.target)))

    def verify(self, group: str, comment: str = "") -> str:
        return self._base("verify", groups=(group,), min_cosine=self._cosine, comment=comment)

    def debug(self, groups: tuple[str, ...] = (), flags: tuple[str, ...] = (), comment: str = "") -> str:
        return self._base("debug", groups=tuple(groups), flags=flags, comment=comment)

    def integrate(self, eager: Path | None, compiled: Path | None, html: Path | None = None, comment: str = "") -> str:
        """With both profiles, or neither (layers 1 and 3 only: the compile alone)."""
        profiles = (Path(eager), Path(compiled)) if eager is not None and compiled is not None else ()
        return self._base("integrate", *profiles, min_cosine=self._cosine,
                          options=(("--html", Path(html)),) if html else (), flags=("--force",) if html else (),
                          comment=comment)

    def benefit(self, off: Path, on: Path, comment: str = "") -> str:
        """The fusion's ledger from the run's own profiles (off: compiled without the op's groups)."""
        return str(SdcompileCommand("benefit", (Path(off), Path(on)), op=self.options.op, comment=comment))

    def copy_audit(self, eager: Path, compiled: Path, html: Path | None = None, comment: str = "") -> str:
        o = self.options
        return str(SdcompileCommand(
            "copy-audit", (Path(eager), Path(compiled)), model=o.model, op=o.op if o.model else None,
            max_inflation=o.max_inflation, options=(("--html", Path(html)),) if html else (),
            flags=("--force",) if html else (), workdir=o.workdir, comment=comment))
