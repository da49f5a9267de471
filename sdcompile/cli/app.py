"""The `sdcompile` command: builds the Typer app from one module per command and maps errors to exit codes."""

from __future__ import annotations

import importlib
import os
import sys

import typer
from typer.core import TyperGroup

from sdcompile import __version__

# (command name, module under sdcompile.cli, function name), in the order `--help` lists them:
# the seven lifecycle phases, then the tools around them.
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("analyze", "analyze", "analyze"),
    ("scaffold", "scaffold", "scaffold"),
    ("register", "register", "register"),
    ("verify", "verify", "verify"),
    ("debug", "debug", "debug"),
    ("integrate", "integrate", "integrate"),
    ("copy-audit", "copy_audit", "copy_audit"),
    ("run", "run", "run"),
    ("profile", "profile", "profile"),
    ("status", "status", "status"),
    ("backends", "backends", "backends"),
    ("fetch-target", "fetch_target", "fetch_target"),
    ("explain", "explain", "explain"),
)

EXIT_BUG = 70  # an unexpected exception: a bug in sdcompile (EX_SOFTWARE)


class SdcompileGroup(TyperGroup):
    """Maps sdcompile's typed errors to one line on stderr and the documented exit code.

    Done here rather than in `main()` so every way of invoking the app (console script, `python -m`,
    Typer's test runner) behaves the same.
    """

    def list_commands(self, ctx):  # keep the declared order, not alphabetical
        return list(self.commands)

    def invoke(self, ctx):
        from sdcompile.errors import SdcompileError

        try:
            return super().invoke(ctx)
        except SdcompileError as exc:
            if os.environ.get("SDCOMPILE_DEBUG") == "1":
                raise
            typer.echo(f"error: {exc.one_line()}", err=True)
            ctx.exit(exc.exit_code)
        except (typer.Exit, typer.Abort, KeyboardInterrupt):
            raise
        except Exception as exc:  # noqa: BLE001 - the last line of defence; a traceback only on request
            # Usage errors from the CLI framework carry their own message and exit code (2).
            if type(exc).__module__.startswith(("click", "typer")) or os.environ.get("SDCOMPILE_DEBUG") == "1":
                raise
            typer.echo(
                f"internal error: {type(exc).__name__}: {exc} — this is a bug in sdcompile; "
                "rerun with SDCOMPILE_DEBUG=1 for the traceback",
                err=True,
            )
            ctx.exit(EXIT_BUG)


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
        "Exit codes: 0 ok; 1 a gate failed; 2 bad input or usage; 3 environment missing.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )

    @app.callback()
    def _root(
        version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Show the version."),
    ) -> None:
        pass

    for name, module, func in COMMANDS:
        fn = getattr(importlib.import_module(f"sdcompile.cli.{module}"), func)
        app.command(name=name)(fn)
    return app


app = build_app()


def main(argv: list[str] | None = None) -> None:
    app(args=argv if argv is not None else sys.argv[1:], prog_name="sdcompile")
