"""The `sdcompile` command: builds the Typer app from one module per command and maps errors to exit codes.

A command is built (its module imported, its options turned into click parameters) only when it runs or its help is
asked for: `sdcompile --help` lists the commands from the table below and imports none of them."""

from __future__ import annotations

import importlib
import os
import sys
from typing import NamedTuple

import typer
from typer.core import TyperCommand, TyperGroup

from sdcompile._version import __version__


class CommandEntry(NamedTuple):
    name: str
    module: str  # under sdcompile.cli; the function has the module's name
    summary: str  # its line in `sdcompile --help` (the command's own help is its function's docstring)


# In the order `--help` lists them: the seven lifecycle phases, then the tools around them.
COMMANDS: tuple[CommandEntry, ...] = (
    CommandEntry("analyze", "analyze", "Phase 1: where each primitive runs in the model"),
    CommandEntry("scaffold", "scaffold", "Phase 2: reuse a pattern group, or generate one"),
    CommandEntry("register", "register", "Phase 3: register a group in the target's files"),
    CommandEntry("verify", "verify", "Phase 4: compile with only the chosen group"),
    CommandEntry("debug", "debug", "Phase 5: why a pattern does (not) match the model"),
    CommandEntry("integrate", "integrate", "Phase 6: hits and kernels, eager vs compiled"),
    CommandEntry("benefit", "benefit", "Phase 6: whether a fusion that hit also gains"),
    CommandEntry("copy-audit", "copy_audit", "Phase 7: copy kernels, inflation and remedies"),
    CommandEntry("run", "run", "All seven phases for one model/op pair"),
    CommandEntry("matrix", "matrix", "The fusion-coverage table: run per model and op"),
    CommandEntry("profile", "profile", "Profile a tiny model eager or compiled"),
    CommandEntry("status", "status", "Each pair's phases; the target's groups"),
    CommandEntry("backends", "backends", "What compiles a model here, and what is emulated"),
    CommandEntry("doctor", "doctor", "This environment and the behaviours that apply"),
    CommandEntry("fetch-target", "fetch_target", "Copy the real MindIE-SD source to work on"),
    CommandEntry("new-model", "new_model", "Write a factory for a diffusers class"),
    CommandEntry("capture", "capture", "Record your pipeline's transformer and inputs"),
    CommandEntry("models", "models", "The models --model takes"),
    CommandEntry("explain", "explain", "The mismatch catalog and the guides"),
)
_BY_NAME = {entry.name: entry for entry in COMMANDS}

# Which commands need torch: always (they run a model or the target's backend), or only when one of the listed
# options (parameter name, flag) is set. They check the installed torch before any work; the others read files only
# and never need it (doctor reports an unsupported torch rather than refusing).
ALWAYS = True
NEEDS_TORCH: dict[str, bool | tuple[tuple[str, str], ...]] = {
    "analyze": ALWAYS,
    "scaffold": ALWAYS,
    "register": (("import_modules", "--import"),),  # --check --import imports the target's pattern modules
    "verify": ALWAYS,
    "debug": ALWAYS,
    "integrate": (("model", "--model"), ("model_file", "--model-file")),  # profiles and compile logs are files
    "run": ALWAYS,
    "benefit": (("model", "--model"), ("model_file", "--model-file")),  # profiles are files
    "profile": ALWAYS,
    "new-model": ALWAYS,
    "models": (("check", "--check"),),  # listing reads diffusers' export table, building needs torch
}

EXIT_BUG = 70  # an unexpected exception: a bug in sdcompile (EX_SOFTWARE)
EXIT_INTERRUPTED = 130  # Ctrl-C: 128 + SIGINT, as shells report it
# True of every write sdcompile makes: files are renamed into place whole (util.fsutil), an edit of several files
# of a tree is committed all or none (util.fs_transaction), a profile folder (CPU capture or torch_npu's) and run's
# scratch tree are staged and then renamed into place (core.profiles.capture, lifecycle.target), and fetch-target
# removes a copy it did not finish (cli.fetch_target).
INTERRUPTED = "interrupted — nothing sdcompile writes was left half-written; run the command again"


class SdcompileGroup(TyperGroup):
    """Maps sdcompile's typed errors to one line on stderr and the documented exit code.

    Done here rather than in `main()` so every way of invoking the app (console script, `python -m`,
    Typer's test runner) behaves the same.
    """

    def list_commands(self, ctx):  # keep the declared order, not alphabetical
        return [entry.name for entry in COMMANDS]

    def get_command(self, ctx, cmd_name):
        if cmd_name not in self.commands and cmd_name in _BY_NAME:
            self.add_command(build_command(_BY_NAME[cmd_name]), cmd_name)
        return self.commands.get(cmd_name)

    def resolve_command(self, ctx, args):
        # Typer suggests from the commands built so far (none yet, here): the suggestion comes from the table.
        name = args[0] if args else ""
        if name and not name.startswith("-") and name not in _BY_NAME and not ctx.resilient_parsing:
            from difflib import get_close_matches

            close = get_close_matches(name, list(_BY_NAME))
            ctx.fail(f"No such command {name!r}." + (f" Did you mean {', '.join(map(repr, close))}?" if close else ""))
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx, formatter):
        """The command list from the table: listing a command does not build it."""
        with formatter.section("Commands"):
            formatter.write_dl([(entry.name, entry.summary) for entry in COMMANDS])

    def make_context(self, info_name, args, parent=None, **extra):
        argv = list(args)  # as typed, for the corrected command line a did-you-mean offers
        try:
            ctx = super().make_context(info_name, args, parent=parent, **extra)
        except KeyboardInterrupt:
            _interrupted()
        ctx.meta[ARGV] = argv
        return ctx

    def invoke(self, ctx):
        from sdcompile.util.choices import UnknownChoice
        from sdcompile.util.errors import EXIT_BAD_INPUT, EXIT_ENVIRONMENT, SdcompileError

        try:
            if not ctx.resilient_parsing:  # not while the shell completes a word
                from sdcompile.cli.config import project_defaults

                ctx.default_map = project_defaults(self, ctx)
            return super().invoke(ctx)
        except SdcompileError as exc:
            _traceback_on_request()  # the exit code stays the documented one: CI reads it in debug runs too
            if isinstance(exc, UnknownChoice) and exc.suggestion is not None:
                command = corrected_command(ctx.meta.get(ARGV, []), exc.value, exc.suggestion)
                if command:
                    exc.with_command(command)
            _error(exc.one_line(), exc.exit_code)
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt:
            _interrupted()
        except (typer.Exit, typer.Abort):
            raise
        except SystemExit as exc:
            # Inside a command only user code (a model file) calls sys.exit; its code would become ours, and
            # sys.exit(0) from a model's forward would pass a CI gate.
            from sdcompile.core.zoo.raised_at import raising_line

            _traceback_on_request()
            _error(f"{raising_line(exc)} called sys.exit({exc.code!r}) — a model file must return, not end the "
                   "process; remove the call", EXIT_BAD_INPUT)
            ctx.exit(EXIT_BAD_INPUT)
        except Exception as exc:  # noqa: BLE001 - the last line of defence; a traceback only on request
            # Usage errors from the CLI framework carry their own message and exit code (2).
            if type(exc).__module__.startswith(("click", "typer")):
                raise
            from sdcompile.rendering.output import emit_error

            _traceback_on_request()
            full = _disk_full(exc)
            if full is not None:  # the machine's, not sdcompile's: writes are whole or absent, so a rerun is safe
                line = (f"no space left on the device writing {full.filename or 'a file'} — free space there (or "
                        "point --workdir / --out elsewhere) and run the command again")
                _error(line, EXIT_ENVIRONMENT)
                ctx.exit(EXIT_ENVIRONMENT)
            line = (f"internal error: {type(exc).__name__}: {exc} — this is a bug in sdcompile; "
                    "rerun with SDCOMPILE_DEBUG=1 for the traceback")
            typer.echo(line, err=True)
            emit_error(line, EXIT_BUG)
            ctx.exit(EXIT_BUG)


def _disk_full(exc: BaseException) -> OSError | None:
    """The OSError saying the device (or the user's quota) is full, wherever it sits in the exception's chain."""
    import errno

    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


ARGV = "sdcompile.argv"


def corrected_command(argv: list[str], wrong: str, right: str) -> str | None:
    """The command line as typed with the first `wrong` value (alone or as --opt=wrong) replaced by `right`; None
    when it does not hold `wrong` (a config file's key)."""
    from sdcompile.util.command_line import CommandLine

    fixed, done = [], False
    for token in argv:
        if not done and token == wrong:
            token, done = right, True
        elif not done and token.startswith("--") and token.endswith(f"={wrong}"):
            token, done = f"{token[:-len(wrong)]}{right}", True
        fixed.append(token)
    return str(CommandLine("sdcompile", tuple(fixed))) if done else None


def _interrupted():
    """Ctrl-C: one line, exit 130 (no traceback, no click 'Aborted!')."""
    from sdcompile.rendering.output import emit_error

    typer.echo(("\n" if sys.stderr.isatty() else "") + INTERRUPTED, err=True)  # past a ^C the terminal echoed
    emit_error(INTERRUPTED, EXIT_INTERRUPTED)
    raise typer.Exit(EXIT_INTERRUPTED)


def _error(line: str, exit_code: int) -> None:
    from sdcompile.rendering.output import emit_error

    typer.echo(f"error: {line}", err=True)
    emit_error(line, exit_code)


def _traceback_on_request() -> None:
    if os.environ.get("SDCOMPILE_DEBUG") == "1":
        import traceback

        traceback.print_exc()


def require_supported_torch(command: str, repo: object = None) -> None:
    """EnvironmentMissing (exit 3) unless the target tree (--repo, $SDCOMPILE_REPO or upward from here; MindIE-SD
    3.1.0's list without one) has a plugin variant for the installed torch; reads torch's dist-info and the tree's
    `mindiesd/_torch_variants.py` as text, so a refused command costs no `import torch`. A torch the tree accepts
    but sdcompile's suite does not run on goes on, with a note said before the command's first output."""
    from sdcompile.core.target.discovery import find_target
    from sdcompile.core.torchcompat.support import torch_support
    from sdcompile.util.errors import EnvironmentMissing, NotATarget

    try:
        root = find_target(repo).root
    except NotATarget:  # the command says what is wrong with the tree itself; the torch check falls back
        root = None
    support = torch_support(root=root)
    where = support.variants.source
    if support.supported:
        if support.untested:
            from sdcompile.rendering.output import note_before_output

            note_before_output(f"note: torch {support.version} has a MindIE-SD plugin variant ({where}) but "
                               f"sdcompile is tested on torch {support.tested_text} ({support.declared} declared): "
                               "results may differ")
        return
    found = "torch is not installed" if support.version is None else \
        f"torch {support.version} has no MindIE-SD plugin variant"
    raise EnvironmentMissing(
        f"{found}: `sdcompile {command}` needs torch {support.range_text} ({where})",
        f"pip install '{support.install_spec}' in this environment (`sdcompile doctor` shows what is installed)",
    )


class LoggedCommand(TyperCommand):
    """A command that logs (at -v) what runs, with which options, and how long it took."""

    def invoke(self, ctx):
        import time

        from sdcompile.cli.config import sources
        from sdcompile.util.log import get_logger, library_warnings_to_log
        from sdcompile.util.option_source import record

        record(sources(self, ctx))
        log = get_logger(__name__)
        log.info("sdcompile %s on python %s: %s", __version__, sys.version.split()[0],
                 " ".join([ctx.info_name, *_given_options(self, ctx)]))
        start = time.perf_counter()
        try:
            with library_warnings_to_log():
                return super().invoke(ctx)
        finally:
            record({})  # a library call after the command (in one process) names its own arguments
            log.info("%s finished in %.1f s", ctx.info_name, time.perf_counter() - start)


def _given_options(command, ctx) -> list[str]:
    """The options the user set, spelled as on the command line (`--json`, `--model flux`)."""
    given = []
    for param in command.params:
        value = ctx.params.get(param.name)
        source = ctx.get_parameter_source(param.name)  # compared by name: typer may carry its own click
        if getattr(source, "name", None) not in ("COMMANDLINE", "ENVIRONMENT"):
            continue
        flag = max(param.opts, key=len) if param.opts and param.opts[0].startswith("-") else ""
        given.append(flag if value is True else f"{flag} {value}".strip())
    return given


def _gated_command(name: str, needs_torch: bool | tuple[tuple[str, str], ...]) -> type[TyperCommand]:
    """A command class that checks torch after parsing (so --help and usage errors still work) and before work."""

    class TorchGatedCommand(LoggedCommand):
        def invoke(self, ctx):
            if needs_torch is True or any(ctx.params.get(param) for param, _ in needs_torch):
                require_supported_torch(name, ctx.params.get("repo"))
            return super().invoke(ctx)

    return TorchGatedCommand


def _torch_help() -> str:
    """The torch requirement per command, said from NEEDS_TORCH so the help and the gate cannot drift. The releases
    are the tree's, so `doctor` names them (reading them here would cost every start-up a catalog)."""

    def needs(name: str) -> str:
        when = NEEDS_TORCH[name]
        return name if when is True else f"{name} {' or '.join(flag for _, flag in when)}"

    named = [entry.name for entry in COMMANDS if entry.name in NEEDS_TORCH]
    partly = [name for name in named if NEEDS_TORCH[name] is not True]
    free = [entry.name for entry in COMMANDS if entry.name not in NEEDS_TORCH]
    return ("Torch with a plugin variant in the target tree's mindiesd/_torch_variants.py: "
            f"{', '.join(map(needs, named))} need it and stop with exit 3 on a torch the tree has no variant for, "
            "or none, before any work. "
            f"{' and '.join(partly)} without those options, and {', '.join(free)}, need no torch "
            "(`sdcompile doctor` says which releases the tree has a variant for, which sdcompile is tested on, and "
            "what this environment has).")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"sdcompile {__version__}")
        raise typer.Exit()


def build_app() -> typer.Typer:
    app = typer.Typer(
        name="sdcompile",
        cls=SdcompileGroup,
        help="Adapt diffusion transformers to MindIE-SD's torch.compile backend: analyze, scaffold, register, "
        "verify, debug, integrate, copy-audit — on a real Ascend NPU or on CPU with an emulated NPU.\n\n"
        "Exit codes: 0 ok; 1 a gate failed; 2 bad input or usage; 3 environment missing.\n\n" + _torch_help(),
        no_args_is_help=True,
        add_completion=True,
        context_settings={"help_option_names": ["-h", "--help"]},
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )

    @app.callback()
    def _root(
        version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Show the version."),
        verbose: int = typer.Option(0, "--verbose", "-v", count=True, show_default=False,
                                    help="Log what each step does on stderr (-vv: with details), and show torch's "
                                    "own warnings; before the command: `sdcompile -v run ...`."),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress, notes or other messages on stderr: only "
                                   "errors, and the result on stdout; before the command: `sdcompile -q run ...`."),
    ) -> None:
        from sdcompile.util.errors import BadInput
        from sdcompile.util.log import configure

        if quiet and verbose:
            raise BadInput("-q/--quiet and -v/--verbose were both given", "pass one of them")
        configure(verbose, quiet=quiet)

    return app


def build_command(entry: CommandEntry) -> TyperCommand:
    """The click command for one table entry: its module's function, as Typer turns one function into a command."""
    import inspect

    from sdcompile.cli.examples import with_examples

    fn = getattr(importlib.import_module(f"sdcompile.cli.{entry.module}"), entry.module)
    needs_torch = NEEDS_TORCH.get(entry.name)
    single = typer.Typer(pretty_exceptions_enable=False, rich_markup_mode=None, add_completion=False)
    single.command(name=entry.name, cls=_gated_command(entry.name, needs_torch) if needs_torch else LoggedCommand,
                   help=with_examples(entry.name, inspect.getdoc(fn) or ""))(fn)
    return typer.main.get_command(single)


app = build_app()


def main(argv: list[str] | None = None) -> None:
    app(args=argv if argv is not None else sys.argv[1:], prog_name="sdcompile")
