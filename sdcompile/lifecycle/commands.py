"""The commands `sdcompile run` prints: each phase on its own and the next step after a failed gate, spelled with
the run's own options so they can be pasted as they are (paths relative to the current folder when inside it)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

DEFAULT_DTYPE = "bf16"


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
    model: str | None
    model_file: str | None
    op: str
    dtype: str
    plain_cpu: bool
    name: str | None
    path: str  # scaffold's --path
    target: Path  # the tree every command acts on
    user_repo: Path | None  # --repo as given to run (None: the scratch copy)
    workdir: Path | None  # --workdir as given to run (None: the default, found the same way again)
    min_cosine: float
    default_min_cosine: float
    max_inflation: float
    default_max_inflation: float
    dry_run: bool = False  # the run is a preview: the runs it suggests preview too


    # ---------------------------------------------------------------------------------------------- pieces
    @property
    def model_args(self) -> str:
        return f"--model {shlex.quote(self.model)}" if self.model else f"--model-file {shlex.quote(self.model_file)}"

    @property
    def device_args(self) -> str:
        return " --plain-cpu" if self.plain_cpu else ""

    @property
    def dtype_args(self) -> str:
        return f" --dtype {self.dtype}" if self.dtype != DEFAULT_DTYPE else ""

    @property
    def repo_args(self) -> str:
        return f" --repo {shown_path(self.target)}"

    @property
    def workdir_args(self) -> str:
        return f" --workdir {shown_path(self.workdir)}" if self.workdir else ""

    def _model(self) -> str:
        return f"{self.model_args}{self.dtype_args}{self.device_args}"

    # --------------------------------------------------------------------------------------------- commands
    def run(self, path: str | None = None, preview: bool | None = None) -> str:
        parts = [f"sdcompile run {self.model_args} --op {self.op}{self.dtype_args}{self.device_args}"]
        if self.name:
            parts.append(f"--name {shlex.quote(self.name)}")
        if (path or self.path) != "auto":
            parts.append(f"--path {path or self.path}")
        if self.user_repo is not None:
            parts.append(f"--repo {shown_path(self.user_repo)}")
        if self.min_cosine != self.default_min_cosine:
            parts.append(f"--min-cosine {self.min_cosine:g}")
        if self.max_inflation != self.default_max_inflation:
            parts.append(f"--max-inflation {self.max_inflation:g}")
        if self.dry_run if preview is None else preview:
            parts.append("--dry-run")
        return " ".join(parts) + self.workdir_args

    def analyze(self, op: str | None = None) -> str:
        return f"sdcompile analyze {self._model()} --op {op or self.op}{self.workdir_args}"

    def scaffold(self, extra: str = "") -> str:
        name = f" --name {shlex.quote(self.name)}" if self.name else ""
        path = f" --path {self.path}" if self.path != "auto" else ""
        return (f"sdcompile scaffold {self._model()} --op {self.op}{name}{path}{extra}{self.repo_args}"
                f"{self.workdir_args}")

    def register(self, word: str, extra: str = "") -> str:
        return (f"sdcompile register --model {shlex.quote(word)} --op {self.op}{extra}{self.repo_args}"
                f"{self.workdir_args}")

    def register_check(self) -> str:
        return f"sdcompile register --check --import{self.repo_args}"

    def verify(self, group: str) -> str:
        cosine = f" --min-cosine {self.min_cosine:g}" if self.min_cosine != self.default_min_cosine else ""
        return (f"sdcompile verify {self._model()} --op {self.op} --group {group}{cosine}{self.repo_args}"
                f"{self.workdir_args}")

    def debug(self, groups: tuple[str, ...] = ()) -> str:
        chosen = "".join(f" --group {g}" for g in groups)
        return f"sdcompile debug {self._model()} --op {self.op}{chosen}{self.repo_args}{self.workdir_args}"

    def profile(self, mode: str, out: Path) -> str:
        return (f"sdcompile profile {self._model()} --mode {mode} --out {shown_path(out)}"
                f"{self.repo_args if mode == 'compile' else ''} --force")

    def integrate(self, eager: Path, compiled: Path, html: Path | None = None) -> str:
        cosine = f" --min-cosine {self.min_cosine:g}" if self.min_cosine != self.default_min_cosine else ""
        out = f" --html {shown_path(html)} --force" if html else ""
        return (f"sdcompile integrate {shown_path(eager)} {shown_path(compiled)} {self._model()} --op {self.op}"
                f"{cosine}{out}{self.repo_args}{self.workdir_args}")

    def copy_audit(self, eager: Path, compiled: Path, html: Path | None = None) -> str:
        model = f" --model {shlex.quote(self.model)} --op {self.op}" if self.model else ""
        out = f" --html {shown_path(html)} --force" if html else ""
        return (f"sdcompile copy-audit {shown_path(eager)} {shown_path(compiled)}{model} "
                f"--max-inflation {self.max_inflation:g}{out}{self.workdir_args}")
