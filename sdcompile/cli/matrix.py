"""`sdcompile matrix`: the measured fusion-coverage table, models x ops, one `sdcompile run` per cell."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from sdcompile.cli import options

DEFAULT_OPS = "rmsnorm,rope,adaln,gelu"
DEFAULT_CELL_TIMEOUT = 1800.0


def matrix(
    action: list[str] | None = typer.Argument(
        None, metavar="merge SHARD.json", help="merge: join the tables `--shard` runs saved (--save or --json) into "
        "one; the options print, compare and write it."),
    models: str | None = typer.Option(None, "--models", help="Comma-separated models, as `run --model` takes them "
                                      "(zoo names, diffusers classes) or FILE.py:FACTORY. Default: the whole zoo."),
    ops: str = typer.Option(DEFAULT_OPS, "--ops", help="Comma-separated ops: rmsnorm, rope, adaln, gelu."),
    jobs: int = typer.Option(1, "--jobs", min=1, help="Cells run at once, each in its own process (at most the "
                             "machine's cores is sensible: each cell compiles)."),
    shard: str | None = typer.Option(None, "--shard", help="Run only shard i of n (i/n): every n-th cell from the "
                                     "i-th, so n CI jobs share the table; join their --json with `matrix merge`."),
    cell_timeout: float = typer.Option(DEFAULT_CELL_TIMEOUT, "--cell-timeout", min=0, help="Seconds one cell's run "
                                       "may take; past it the cell is 'timed out' (0: no limit)."),
    out: Path = typer.Option(Path(".sdcompile") / "matrix", "--out", help="Where each cell's workspace, scratch "
                             "target and report are kept (cells/<model>-<op>/)."),
    repo: Path | None = typer.Option(None, "--repo", help="Your MindIE-SD tree (the folder holding mindiesd/): each "
                                     "cell runs on a copy of it. Default: the release, as `run` takes it."),
    compare: Path | None = typer.Option(None, "--compare", help="An earlier table (--save or --json): print the cells "
                                        "whose outcome changed; exit 1 when the target covers one less than then "
                                        "(reused -> generated -> fails)."),
    allow_mixed: bool = typer.Option(False, "--allow-mixed", help="merge: join shards made through another target "
                                     "or by another sdcompile."),
    save: Path | None = typer.Option(None, "--save", help="Also write the table as JSON here: what `matrix merge` "
                                     "and --compare read (the document --json prints)."),
    markdown: Path | None = typer.Option(None, "--markdown", help="Also write the table as Markdown here, each cell "
                                         "linking to its run's report."),
    section: str | None = typer.Option(None, "--section", help="With --markdown: write the table into that page "
                                       "between the lines <!-- NAME --> and <!-- end of NAME --> instead of "
                                       "replacing the file. With --until scaffold, {op} and {torch-range} in NAME "
                                       "give each op's and torch's table its own section."),
    until: str = typer.Option("run", "--until", metavar="<run|scaffold>",
                              help="How far each cell goes: run (the whole lifecycle) or scaffold (its dry run only: "
                              "what it would reuse, generate or refuse, per model)."),
    html: Path | None = options.Html,
    force: bool = options.Force,
    json_: bool = options.Json,
) -> None:
    """The fusion-coverage table measured on this machine's torch and target: for every model and op, the outcome
    `sdcompile run` reaches (reused, generated and by which carrier, dead end, fails on the NPU kernel, fails at a
    phase, refused, crashed, timed out), with the op's fused calls in the compiled graph, its fused launches per
    step and a link to the cell's report; --until scaffold stops each cell at scaffold's dry run. Cells run in
    processes of their own (--jobs), each with its own workspace and target copy; --shard i/n runs a slice for a CI
    job matrix and `matrix merge` joins the slices. Exit 1 when --compare finds a regression."""
    from sdcompile.core.ops import OPS
    from sdcompile.core.zoo.models import zoo_entries
    from sdcompile.lifecycle.matrix.cells import parse_shard
    from sdcompile.lifecycle.matrix.markdown import write_markdown
    from sdcompile.lifecycle.matrix.merge import compare as compared
    from sdcompile.lifecycle.matrix.merge import merge
    from sdcompile.lifecycle.matrix.render import render_matrix, verdict
    from sdcompile.lifecycle.matrix.run_cell import RUN, SCAFFOLD
    from sdcompile.lifecycle.matrix.table import run_matrix
    from sdcompile.rendering.output import emit, json_document, message
    from sdcompile.util.choices import check_choice
    from sdcompile.util.errors import BadInput
    from sdcompile.util.fsutil import atomic_write_text
    from sdcompile.util.input_checks import check_output_file

    until = check_choice(until, (RUN, SCAFFOLD), "--until")
    if section is not None and markdown is None:
        raise BadInput("--section needs --markdown PAGE", "add --markdown with the page that holds the section")
    for path, option in ((save, "--save"), (None if section else markdown, "--markdown"), (html, "--html")):
        if path is not None:  # before the work: a long run must not end in a path it cannot write
            check_output_file(path, force, option)
    if action:
        if action[0] != "merge":
            raise BadInput(f"matrix takes no argument {action[0]!r}", "run `sdcompile matrix [options]`, or "
                           "`sdcompile matrix merge SHARD.json ...` to join shards")
        report = merge([Path(p) for p in action[1:]], allow_mixed)
    else:
        op_list = tuple(dict.fromkeys(check_choice(o, OPS, "op") for o in ops.split(",") if o.strip()))
        if not op_list:
            raise BadInput("--ops names no op", f"e.g. --ops {DEFAULT_OPS}")
        model_list = tuple(dict.fromkeys(m.strip() for m in models.split(",") if m.strip())) if models \
            else tuple(zoo_entries())
        if not model_list:
            raise BadInput("--models names no model", "e.g. --models flux,wan, or leave it out for the whole zoo")
        report = run_matrix(model_list, op_list, out.resolve(), jobs=jobs, shard=parse_shard(shard),
                            cell_timeout=cell_timeout or None, repo=repo, until=until, progress=message)
    if compare is not None:
        report = compared(report, compare)
    if save is not None:
        atomic_write_text(save, json.dumps(json_document(report, verdict(report)), ensure_ascii=False) + "\n")
        message(f"wrote {save}")
    if markdown is not None:
        write_markdown(report, markdown, section)
        message(f"wrote {markdown}" + (f" (section {section})" if section else ""))
    if html is not None:
        from sdcompile.lifecycle.matrix.page import write_matrix_html

        write_matrix_html(report, html, force=True)  # checked above
        message(f"wrote {html}")
    emit(report, json_, render_matrix, verdict)
    if report.regressions:
        raise typer.Exit(1)
