"""The commands sdcompile prints for you to run next, built in one place from typed fields and quoted with
shlex.quote, so each runs as printed when pasted into a shell in the folder the command ran in (a path inside that
folder is shown relative to it, any other absolute).

`SdcompileCommand` is an `sdcompile` command: its options in one order everywhere, each left out when None (the
caller leaves out what the user did not give, or what is at its default). `CommandLine` is any other line (`patch`,
`cd TREE && python -m pytest ...`, `$EDITOR FILE`)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

Arg = str | Path | int | float


def shown_path(path: Path | str) -> str:
    """`path` relative to the current folder when it lies inside it, else absolute; shell-quoted."""
    path = Path(path).resolve()
    try:
        rel = path.relative_to(Path.cwd().resolve())
        text = str(rel) if str(rel) != "." else "."
    except ValueError:
        text = str(path)
    return shlex.quote(text)


def quoted(arg: Arg) -> str:
    """One argument as a shell reads it back: a Path as shown_path, a float without trailing zeros."""
    if isinstance(arg, Path):
        return shown_path(arg)
    if isinstance(arg, float):
        short = f"{arg:g}"
        return short if float(short) == arg else repr(arg)
    return shlex.quote(str(arg))


def with_comment(text: str, comment: str) -> str:
    return f"{text}   # {comment}" if comment else text


@dataclass(frozen=True)
class CommandLine:
    """A shell line that is not an sdcompile command: `program` printed as is (a constant such as `patch` or
    `$EDITOR`), every argument quoted; `cd` runs it in that folder, `env` sets variables for it."""

    program: str
    args: tuple[Arg, ...] = ()
    cd: Path | None = None
    env: tuple[tuple[str, str], ...] = ()
    comment: str = ""

    def __str__(self) -> str:
        words = [f"{name}={shlex.quote(value)}" for name, value in self.env]
        words += [self.program, *(quoted(a) for a in self.args)]
        text = " ".join(words)
        if self.cd is not None:
            text = f"cd {shown_path(self.cd)} && {text}"
        return with_comment(text, self.comment)


@dataclass(frozen=True)
class SdcompileCommand:
    """`sdcompile COMMAND ...`: the options a next command carries over from the command that printed it."""

    command: str  # the subcommand: "verify", "run", "explain", ...
    positional: tuple[Arg, ...] = ()
    model: str | None = None
    model_file: str | None = None  # path:factory, as given
    build: tuple[tuple[str, Arg], ...] = ()  # how the model is built: ModelBuild.options() (--size, --config, ...)
    op: str | None = None
    name: str | None = None
    groups: tuple[str, ...] = ()
    dtype: str | None = None
    plain_cpu: bool = False
    path: str | None = None  # scaffold's and run's --path
    min_cosine: float | None = None
    max_inflation: float | None = None
    timeout: float | None = None
    options: tuple[tuple[str, Arg], ...] = ()  # the command's own (("--mode", "eager"), ("--out", Path(...)))
    flags: tuple[str, ...] = ()  # ("--force",), ("--dry-run",)
    repo: Path | None = None
    workdir: Path | None = None
    comment: str = ""

    def argv(self) -> list[str]:
        """The words after `sdcompile`, unquoted (what the shell gives the command back)."""
        return shlex.split(self.text(comment=False))[1:]

    def text(self, comment: bool = True) -> str:
        pairs: list[tuple[str, Arg]] = []
        if self.model is not None:
            pairs.append(("--model", self.model))
        elif self.model_file is not None:
            pairs.append(("--model-file", self.model_file))
        pairs += list(self.build)
        for flag, value in (("--op", self.op), ("--name", self.name)):
            if value is not None:
                pairs.append((flag, value))
        pairs += [("--group", g) for g in self.groups]
        if self.dtype is not None:
            pairs.append(("--dtype", self.dtype))
        words = ["sdcompile", self.command, *(quoted(p) for p in self.positional)]
        words += [f"{flag} {quoted(value)}" for flag, value in pairs]
        words += ["--plain-cpu"] if self.plain_cpu else []
        own: list[tuple[str, Arg | None]] = [
            ("--path", self.path), ("--min-cosine", self.min_cosine), ("--max-inflation", self.max_inflation),
            ("--timeout", self.timeout), *self.options]
        words += [f"{flag} {quoted(value)}" for flag, value in own if value is not None]
        words += list(self.flags)
        words += [f"{flag} {quoted(value)}" for flag, value in (("--repo", self.repo), ("--workdir", self.workdir))
                  if value is not None]
        text = " ".join(words)
        return with_comment(text, self.comment) if comment else text

    def __str__(self) -> str:
        return self.text()


__all__ = ["CommandLine", "SdcompileCommand", "quoted", "shown_path", "with_comment"]
