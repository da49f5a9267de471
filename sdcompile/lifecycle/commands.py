"""The commands `sdcompile run` prints: each phase on its own and the next step after a failed gate, spelled with
the run's own options so they can be pasted as they are (paths relative to the current folder when inside it)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from sdcompile.lifecycle.options import DEFAULT_DTYPE, DEFAULT_MAX_INFLATION, DEFAULT_MIN_COSINE, RunOptions


def shown_path(path: Path | str) -> str:
    """`path` relative to the current folder when it lies inside it, else absolute; shell-quoted."""
    path = Path(path).resolve()
    try:
        rel = path.relative_to(Path.cwd().resolve())
        text = str(rel) if str(rel) != "." else "."
    except ValueError:
        text = str(path)
    return shlex.quote(text)


@dataclass(frozen=True)
class Commands:
    """The commands, built from the run's options (a threshold at its default is left out, as a user would)."""

    options: RunOptions

    # ---------------------------------------------------------------------------------------------- pieces
    @property
    def model_args(self) -> str:
        o = self.options
        return f"--model {shlex.quote(o.model)}" if o.model else f"--model-file {shlex.quote(o.model_file)}"

    @property
    def device_args(self) -> str:
        return " --plain-cpu" if self.options.plain_cpu else ""

    @property
    def dtype_args(self) -> str:
        return f" --dtype {self.options.dtype}" if self.options.dtype != DEFAULT_DTYPE else ""

    @property
    def repo_args(self) -> str:
        return f" --repo {shown_path(self.options.target)}"

    @property
    def workdir_args(self) -> str:
        return f" --workdir {shown_path(self.options.workdir)}" if self.options.workdir else ""

    @property
    def cosine_args(self) -> str:
        cosine = self.options.min_cosine
        return f" --min-cosine {cosine:g}" if cosine != DEFAULT_MIN_COSINE else ""

    @property
    def timeout_args(self) -> str:
        timeout = self.options.timeout
        return f" --timeout {timeout:g}" if timeout is not None else ""

    def _model(self) -> str:
        return f"{self.model_args}{self.dtype_args}{self.device_args}{self.timeout_args}"

    # --------------------------------------------------------------------------------------------- commands
    def run(self, path: str | None = None, preview: bool | None = None) -> str:
        o = self.options
        parts = [f"sdcompile run {self.model_args} --op {o.op}{self.dtype_args}{self.device_args}"]
        if o.name:
            parts.append(f"--name {shlex.quote(o.name)}")
        if (path or o.path) != "auto":
            parts.append(f"--path {path or o.path}")
        if o.user_repo is not None:
            parts.append(f"--repo {shown_path(o.user_repo)}")
        if o.min_cosine != DEFAULT_MIN_COSINE:
            parts.append(f"--min-cosine {o.min_cosine:g}")
        if o.max_inflation != DEFAULT_MAX_INFLATION:
            parts.append(f"--max-inflation {o.max_inflation:g}")
        if o.timeout is not None:
            parts.append(f"--timeout {o.timeout:g}")
        if o.dry_run if preview is None else preview:
            parts.append("--dry-run")
        return " ".join(parts) + self.workdir_args

    def analyze(self, op: str | None = None) -> str:
        return f"sdcompile analyze {self._model()} --op {op or self.options.op}{self.workdir_args}"

    def scaffold(self, extra: str = "") -> str:
        o = self.options
        name = f" --name {shlex.quote(o.name)}" if o.name else ""
        path = f" --path {o.path}" if o.path != "auto" else ""
        return (f"sdcompile scaffold {self._model()} --op {o.op}{name}{path}{extra}{self.repo_args}"
                f"{self.workdir_args}")

    def register(self, word: str, extra: str = "") -> str:
        return (f"sdcompile register --model {shlex.quote(word)} --op {self.options.op}{extra}{self.repo_args}"
                f"{self.workdir_args}")

    def register_check(self) -> str:
        return f"sdcompile register --check --import{self.repo_args}"

    def verify(self, group: str) -> str:
        return (f"sdcompile verify {self._model()} --op {self.options.op} --group {group}{self.cosine_args}"
                f"{self.repo_args}{self.workdir_args}")

    def debug(self, groups: tuple[str, ...] = ()) -> str:
        chosen = "".join(f" --group {g}" for g in groups)
        return f"sdcompile debug {self._model()} --op {self.options.op}{chosen}{self.repo_args}{self.workdir_args}"

    def profile(self, mode: str, out: Path) -> str:
        return (f"sdcompile profile {self._model()} --mode {mode} --out {shown_path(out)}"
                f"{self.repo_args if mode == 'compile' else ''} --force")

    def integrate(self, eager: Path, compiled: Path, html: Path | None = None) -> str:
        out = f" --html {shown_path(html)} --force" if html else ""
        return (f"sdcompile integrate {shown_path(eager)} {shown_path(compiled)} {self._model()} --op "
                f"{self.options.op}{self.cosine_args}{out}{self.repo_args}{self.workdir_args}")

    def copy_audit(self, eager: Path, compiled: Path, html: Path | None = None) -> str:
        o = self.options
        model = f" --model {shlex.quote(o.model)} --op {o.op}" if o.model else ""
        out = f" --html {shown_path(html)} --force" if html else ""
        return (f"sdcompile copy-audit {shown_path(eager)} {shown_path(compiled)}{model} "
                f"--max-inflation {o.max_inflation:g}{out}{self.workdir_args}")
