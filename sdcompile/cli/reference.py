"""Generate docs/cli.md from the Typer app, so the reference can never drift from the code.

    python -m sdcompile.cli.reference > docs/cli.md        (what `make docs` runs)

tests/test_docs.py fails when docs/cli.md differs from this output.
"""

from __future__ import annotations

import typer

from sdcompile.cli.app import app

# The environment variables sdcompile reads, for the reference page (each is read where its name is defined).
ENVIRONMENT = (
    ("SDCOMPILE_REPO", "the MindIE-SD tree when --repo is not given"),
    ("SDCOMPILE_WORKDIR", "the workspace when --workdir is not given (default ./.sdcompile)"),
    ("SDCOMPILE_DEVICE", "the device mode: auto (default), emulated, plain-cpu or npu"),
    ("SDCOMPILE_NPU_DEVICE", "the torch device tensors use on a real NPU (default npu)"),
    ("SDCOMPILE_CACHE", "where the real MindIE-SD release is cached (default ~/.cache/sdcompile)"),
    ("SDCOMPILE_MIN_COSINE", "--min-cosine of run, verify and integrate when not given on the command line"),
    ("SDCOMPILE_MAX_INFLATION", "--max-inflation of run and copy-audit when not given on the command line"),
    ("SDCOMPILE_TIMEOUT", "seconds a model's build and each forward may take when --timeout is not given "
     "(default 600; 0: no limit)"),
    ("SDCOMPILE_LOCK_TIMEOUT", "seconds to wait for another sdcompile editing the same tree or running on the same "
     "model/op pair (default 10)"),
    ("SDCOMPILE_CATALOG_DIR", "read the catalogs from this folder instead of the installed ones"),
    ("SDCOMPILE_NPU_KERNELS", "0: run the tree's CPU fallback instead of its Triton kernels under Triton's "
                              "interpreter (every verdict then says the NPU's kernels were not run)"),
    ("SDCOMPILE_CPU_REFERENCE_OPS", "1: use sdcompile's CPU reference kernels even where the real torch_npu is "
     "installed"),
    ("SDCOMPILE_DEBUG", "1: print tracebacks and keep the code a failed generation produced"),
    ("SDCOMPILE_MEMORY_GB", "the memory a model's build may take (default: the kernel's MemAvailable); a config "
     "needing more is refused before it is built"),
    ("SDCOMPILE_CAPTURE_OUT", "set by `sdcompile capture` for the program it runs: where the recorder writes"),
    ("SDCOMPILE_CAPTURE_CALLS", "set by `sdcompile capture`: forward calls to record (--calls)"),
    ("SDCOMPILE_CAPTURE_STOP", "set by `sdcompile capture`: 1 ends the program once the file is written"),
)


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _param_row(param) -> str:
    help_text = _cell(getattr(param, "help", "") or "")
    if param.param_type_name == "argument":
        state = "required" if param.required else "optional"
        return f"| `{param.name.upper()}` | argument, {state} | {help_text} |"
    names = ", ".join(f"`{o}`" for o in (*param.opts, *param.secondary_opts))
    default = param.default
    shown = "" if getattr(param, "is_flag", False) or default in (None, False, (), []) else f"`{default}`"
    return f"| {names} | {shown} | {help_text} |"


def _help(text: str) -> list[str]:
    """A command's help as Markdown: its Examples block (kept unwrapped for the terminal) as a console block."""
    from sdcompile.cli.examples import NO_REWRAP

    prose, _, examples = text.strip().partition(f"Examples:\n\n{NO_REWRAP}\n")
    lines = [prose.strip(), ""]
    if examples:
        lines += ["Examples:", "", "```sh", *(line[2:] for line in examples.splitlines()), "```", ""]
    return lines


def _config(group, ctx) -> list[str]:
    """The project config's keys and the options each sets (those that read its environment variable)."""
    from sdcompile.cli.config import env_name
    from sdcompile.util.project_config import KEYS

    rows = []
    for key, (param, kind) in KEYS.items():
        where = [f"`{name} {max(p.opts, key=len)}`" for name in group.list_commands(ctx)
                 for p in group.get_command(ctx, name).params
                 if p.name == param and getattr(p, "envvar", None) == env_name(key)]
        rows.append(f"| `{key}` | {'path' if kind.__name__ == 'Path' else 'number'} | `${env_name(key)}` | "
                    f"{', '.join(where)} |")
    return ["## Project config", "",
            "`sdcompile.toml`, or a `[tool.sdcompile]` table in `pyproject.toml`, in the current folder or the "
            "nearest parent that has one (`sdcompile.toml` first), gives defaults to the options below. Precedence: "
            "the command line, then the environment variable, then the file, then the built-in default. Relative "
            "paths are relative to the file's folder. An unknown key or a value of the wrong type is exit 2 naming "
            "the file and the key.", "",
            "```toml", "# sdcompile.toml", 'repo = "MindIE-SD"', "min_cosine = 0.999", "```", "",
            "| key | value | environment | sets |", "|---|---|---|---|", *rows, ""]


def _usage(name: str, params) -> str:
    args = " ".join(
        p.name.upper() if p.required else f"[{p.name.upper()}]" for p in params if p.param_type_name == "argument"
    )
    return f"sdcompile {name} [OPTIONS] {args}".rstrip()


def render() -> str:
    group = typer.main.get_command(app)
    ctx = group.context_class(group, info_name="sdcompile")
    lines = [
        "# sdcompile command reference",
        "",
        "Generated from the Typer app by `make docs` (`python -m sdcompile.cli.reference`); a test fails when it "
        "is stale. Do not edit by hand.",
        "",
        (group.help or "").strip(),
        "",
    ]
    lines += ["## Global options", "", "Given before the command (`sdcompile -v run ...`).", "",
              "| parameter | default | meaning |", "|---|---|---|",
              *(_param_row(p) for p in group.params if p.name != "help"), "",
              "## Environment", "", "| variable | meaning |", "|---|---|",
              *(f"| `{name}` | {_cell(meaning)} |" for name, meaning in ENVIRONMENT), "", *_config(group, ctx)]
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        params = [p for p in cmd.params if p.name != "help"]
        lines += [f"## `sdcompile {name}`", "", *_help(cmd.help or ""), "```", _usage(name, params), "```", ""]
        if params:
            lines += ["| parameter | default | meaning |", "|---|---|---|", *(_param_row(p) for p in params), ""]
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    import sys

    sys.stdout.write(render())
