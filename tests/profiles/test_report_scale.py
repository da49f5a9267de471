"""The per-step and per-segment tables do not grow with the run: on a 400-step pair copy-audit folds the steps whose
copy counts repeat their neighbours', shows every one that differs, and -v shows them all."""

from __future__ import annotations

import json
import re

import pytest
from layouts import ATTN, COPY, EPOCH_NS, MATMUL, kernel_csv, layers

STEPS, ODD_STEP = 400, 200


def _side(path, per_layer, odd_layer=None):
    table = []
    for step in range(1, STEPS + 1):
        layer = odd_layer if step == ODD_STEP and odd_layer else per_layer
        table += layers(3, layer, step=step, t0=EPOCH_NS + step * 10_000_000)
    return kernel_csv(path, table)


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    folder = tmp_path_factory.mktemp("long")
    eager = _side(folder / "eager.csv", [MATMUL, ATTN, COPY])
    # compiled: two copies a layer, and one step with a third (the row the report must not fold away)
    compiled = _side(folder / "compile.csv", [MATMUL, ATTN, COPY, COPY], odd_layer=[MATMUL, ATTN, COPY, COPY, COPY])
    return eager, compiled


@pytest.mark.parametrize("width", [80, 200])
def test_a_400_step_pair_shows_every_step_that_differs_in_a_short_table(pair, cli, width):
    out = cli("copy-audit", *map(str, pair), env={"COLUMNS": str(width)})
    assert out.exit_code == 0, out.stderr
    steps = out.stdout.split("Copies per step", 1)[1].split("Copies per attention segment", 1)[0]
    assert len(steps.splitlines()) <= 12, steps  # the title, the header and 7 rows
    assert "alike" in steps and "(-v: all)" in steps
    shown = {int(n) for n in re.findall(r"^\s*(\d+)\s+\d", steps, re.M)}  # a row's first cell, then its counts
    # the first and last step, the odd one and the steps either side of it (the ends of the runs around it)
    assert {1, ODD_STEP - 1, ODD_STEP, ODD_STEP + 1, STEPS} <= shown and 100 not in shown, steps


@pytest.mark.parametrize("width", [80, 200])
def test_the_whole_report_on_a_400_step_pair_is_one_screen(pair, cli, width):
    """Under 60 lines at either width, the verdict last; what -v adds (every rule, row and remedy detail) is not
    there."""
    out = cli("copy-audit", *map(str, pair), env={"COLUMNS": str(width)})
    assert out.exit_code == 0, out.stderr
    lines = out.stdout.rstrip("\n").splitlines()
    assert len(lines) < 60, out.stdout
    assert lines[-1].startswith("INFO: copy kernels 1200 -> 2403")
    assert "aclgraph_with_compile = True" in out.stdout and "caveat:" not in out.stdout
    verbose = cli("-v", "copy-audit", *map(str, pair), env={"COLUMNS": str(width)})
    assert "caveat:" in verbose.stdout and "By rule" in verbose.stdout


def test_verbose_shows_every_step(pair, cli):
    out = cli("-v", "copy-audit", *map(str, pair), env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.stderr
    steps = out.stdout.split("Copies per step", 1)[1].split("Copies per attention segment", 1)[0]
    assert "alike" not in steps and len(re.findall(r"^\s*\d+\s+\d", steps, re.M)) == STEPS


@pytest.mark.parametrize("command", ["copy-audit", "integrate"])
def test_json_renders_no_table_and_takes_its_verdict_from_the_result(pair, monkeypatch, command):
    """--json prints the document and the verdict line: no renderer runs, no table is drawn (on a 400-step pair the
    human report was most of the time --json took)."""
    from rich.table import Table
    from typer.testing import CliRunner

    from sdcompile.cli.app import app

    def refuse(*args, **kwargs):
        raise AssertionError("--json rendered the human report")

    monkeypatch.setattr("sdcompile.phases.copy_audit.render.render_copy_audit", refuse)
    monkeypatch.setattr("sdcompile.phases.integrate.render.render_integrate", refuse)
    monkeypatch.setattr(Table, "__rich_console__", refuse)
    out = CliRunner().invoke(app, [command, *map(str, pair), "--json"], catch_exceptions=False)
    assert out.exit_code == 0, out.output
    word = out.stderr.strip().splitlines()[-1].split(":", 1)[0]
    assert word in ("PASS", "INFO")
    # the document's verdict: the closing word, unless the result has its own (integrate's "incomplete" is INFO)
    assert json.loads(out.stdout)["verdict"] in (word.lower(), "incomplete")


def test_a_many_rank_job_folds_its_alike_ranks_and_shows_the_odd_one(tmp_path, cli):
    """Per rank follows the same rule as steps and segments: 12 ranks, one with an extra copy a layer."""
    from layouts import torch_npu_session

    for side, per_layer in (("eager", [MATMUL, ATTN, COPY]), ("compile", [MATMUL, ATTN, COPY, COPY])):
        for rank in range(12):
            layer = [*per_layer, COPY] if side == "compile" and rank == 7 else per_layer
            torch_npu_session(tmp_path / side, rank=rank, timestamp=f"20260105101010{rank:03d}",
                              table=layers(3, layer, t0=EPOCH_NS))
    out = cli("copy-audit", str(tmp_path / "eager"), str(tmp_path / "compile"), env={"COLUMNS": "80"})
    assert out.exit_code == 0, out.stderr
    ranks = out.stdout.split("Per rank", 1)[1].split("Copies per step", 1)[0]
    assert "alike" in ranks and "-v: all" in ranks
    compile_rows = [line.split() for line in ranks.splitlines() if line.strip().startswith("compile")]
    assert [r[2] for r in compile_rows].count("9") == 1  # rank 7's copies (3 a layer), not folded away
    assert len(ranks.splitlines()) < 16, ranks  # 24 rank rows without folding
    verbose = cli("-v", "copy-audit", str(tmp_path / "eager"), str(tmp_path / "compile"), env={"COLUMNS": "80"})
    every = verbose.stdout.split("Per rank", 1)[1].split("Copies per step", 1)[0]
    assert "alike" not in every and sum(line.strip().startswith(("eager", "compile")) for line in
                                        every.splitlines()) == 24
