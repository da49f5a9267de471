"""`sdcompile matrix`: each cell is what `sdcompile run` reaches for its pair, made in a process and workspace of its
own; shards (`--shard i/n`) joined by `matrix merge` make the table; `--compare` finds a group broken on purpose."""

from __future__ import annotations

import json
import re
import shlex
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from guide_commands import check, console_blocks, environment, run_commands

from sdcompile.lifecycle.matrix.cells import parse_shard, plan, shard_of
from sdcompile.lifecycle.matrix.results import PASSING
from sdcompile.util.errors import BadInput
from tests.conftest import REPO_ROOT as ROOT
from tests.conftest import run_cli

MODEL, OPS = "flux", ("rmsnorm", "gelu")


GUIDE = ROOT / "docs" / "matrix.md"
WORKFLOW = ROOT / "docs" / "examples" / "fusion-coverage.yml"


@pytest.fixture(scope="module")
def table(tmp_path_factory, mindiesd_cache):
    """The guide's commands as a reader runs them, its two shards side by side: (folder, the merged table, the
    shards' tables, what each command did)."""
    from sdcompile.core.target.package_cache import scratch_copy

    folder = tmp_path_factory.mktemp("matrix")
    env = environment(scratch_copy(folder / "mindiesd-3.1.0"))
    work = folder / "work"
    work.mkdir()
    commands = console_blocks(GUIDE)
    shards = [c for c in commands if "--shard" in c.command]
    assert len(shards) == 2 and commands[:2] == shards
    with ThreadPoolExecutor(2) as pool:
        outcomes = list(pool.map(lambda c: run_cli(*shlex.split(c.command)[1:], cwd=work, env=env, timeout=1800),
                                 shards))
    outcomes += run_commands(commands[2:], work, env)
    problems = check(commands, outcomes)
    assert not problems, "\n\n".join(problems)
    read = [json.loads((work / f"shard-{i}.json").read_text()) for i in (1, 2)]
    return work, json.loads((work / "coverage.json").read_text()), read


def test_the_ci_example_runs_the_guides_commands():
    """The workflow's sdcompile steps, for shard i of 2 and the joined shards, are the guide's (run above)."""
    guide = {c.command for c in console_blocks(GUIDE)}
    steps = re.findall(r"- run: (.*sdcompile matrix.*)", WORKFLOW.read_text())
    assert len(steps) == 3
    for step in steps:
        step = re.sub(r"^if \[ -f coverage.json \]; then (.*); fi$", r"\1", step)
        step = step.replace("shards/*.json", "shard-1.json shard-2.json").replace(" --force", "")
        shards = [step.replace("${{ matrix.shard }}", str(i)) for i in (1, 2)]
        assert all(s in guide for s in shards), step


def test_each_cell_is_what_run_says_for_its_pair(table):
    folder, doc, shards = table
    assert [(c["model"], c["op"]) for c in doc["cells"]] == plan((MODEL,), OPS)
    assert sorted(json.dumps(c, sort_keys=True) for s in shards for c in s["cells"]) == \
        sorted(json.dumps(c, sort_keys=True) for c in doc["cells"])  # the shards together are the table
    for cell in doc["cells"]:
        cells = folder / ".sdcompile" / "matrix"
        (result_file,) = (cells / "cells").glob(f"{MODEL}-{cell['op']}/.sdcompile/*/*/run/run-result.json")
        run = json.loads(result_file.read_text())  # what `sdcompile run` itself returned in that cell
        assert (cell["outcome"] in PASSING) == run["passed"]
        assert cell["phase"] == (run["stopped_at"] or "") and cell["why"] == (run["stop_reason"] or "")
        assert (cells / cell["report"]).is_file() and cell["report"].endswith("report.md")
        assert cell["torch"] == doc["versions"]["torch_version"]
    rmsnorm = next(c for c in doc["cells"] if c["op"] == "rmsnorm")
    # Flux's norms are covered by the release's own groups: reused, named, six fused calls launched once a step each
    assert rmsnorm["outcome"] == "reused" and "RmsNormPatternGroup" in rmsnorm["carrier"]
    assert rmsnorm["fused_nodes"] == 6 and rmsnorm["fused_launches"] == 6.0 and rmsnorm["cosine"] > 0.99


def test_the_markdown_and_html_tables_link_each_cell_to_its_report(table):
    folder, doc, _ = table
    text = (folder / "coverage.md").read_text()
    assert text.startswith("| model | rmsnorm | gelu |\n|---|---|---|\n| flux | [reused 6/6](")
    links = re.findall(r"\]\(([^)]+)\)", text)
    assert len(links) == len(doc["cells"]) and all((folder / link).is_file() for link in links)
    from sdcompile.lifecycle.matrix.merge import read_table
    from sdcompile.lifecycle.matrix.page import write_matrix_html

    write_matrix_html(read_table(folder / "coverage.json"), folder / "coverage.html")
    html = (folder / "coverage.html").read_text()
    assert "<title>sdcompile matrix" in html and "reused 6/6" in html


def test_merge_refuses_shards_of_another_target_unless_told(table, tmp_path):
    folder, _doc, shards = table
    other = dict(shards[1], target="MindIE-SD 3.1.0 tree (sources 0123456789abcdef)")
    (tmp_path / "other.json").write_text(json.dumps(other))
    refused = run_cli("matrix", "merge", str(folder / "shard-1.json"), str(tmp_path / "other.json"), cwd=tmp_path)
    assert refused.exit_code == 2
    (line,) = refused.stderr.strip().splitlines()
    assert "other.json was made with target" in line and "--allow-mixed" in line
    joined = run_cli("matrix", "merge", str(folder / "shard-1.json"), str(tmp_path / "other.json"), "--allow-mixed",
                     "--json", cwd=tmp_path)
    assert joined.exit_code == 0 and len(json.loads(joined.stdout)["cells"]) == 2


def test_compare_flags_a_group_broken_on_purpose(table, raising_tree):
    """The tree's RMSNorm group made to raise when it replaces a match: the tree no longer covers flux x rmsnorm
    (scaffold may still generate a group of its own that passes: the tree's coverage dropped all the same)."""
    folder, _doc, _ = table
    result = run_cli("matrix", "--models", MODEL, "--ops", "rmsnorm", "--repo", str(raising_tree), "--out",
                     str(folder / "broken"), "--compare", str(folder / "coverage.json"), cwd=folder, timeout=1800)
    assert result.exit_code == 1, result.stderr[-2000:]
    text = " ".join(result.stdout.split())
    assert re.search(r"REGRESSION flux × rmsnorm \(torch [^)]+\): reused -> (generated|fails|dead end)", text), text
    lines = result.stdout.strip().splitlines()
    assert lines[-1].startswith("FAIL: matrix: ") and "1 regression(s) since" in lines[-1]


def test_shards_partition_the_cells_in_a_fixed_order():
    cells = plan(("flux", "wan", "sana"), ("rmsnorm", "rope", "adaln", "gelu"))
    parts = [shard_of(cells, (i, 5)) for i in range(1, 6)]
    assert sorted(c for p in parts for c in p) == sorted(cells) and sum(map(len, parts)) == len(cells)
    assert parts == [shard_of(cells, (i, 5)) for i in range(1, 6)]  # the same slices every time
    for bad in ("0/4", "5/4", "2", "a/b"):
        with pytest.raises(BadInput):
            parse_shard(bad)


def test_a_cell_that_cannot_run_is_a_cell_not_a_lost_table(tmp_path):
    """A model name `run` refuses (exit 2, no result document) is that cell's outcome; the table still ends."""
    result = run_cli("matrix", "--models", "not_a_model_anywhere", "--ops", "rmsnorm", "--out", str(tmp_path / "m"),
                     "--json", cwd=tmp_path)
    assert result.exit_code == 0, result.stderr
    (cell,) = json.loads(result.stdout)["cells"]
    assert cell["outcome"] == "refused" and cell["exit_code"] == 2 and "not_a_model_anywhere" in cell["why"]
    assert Path(tmp_path / "m" / "cells" / "not_a_model_anywhere-rmsnorm" / "run.stderr.txt").is_file()


def test_a_folder_of_the_users_in_the_way_is_bad_input_and_left_alone(tmp_path):
    mine = tmp_path / "m" / "cells" / "flux-rmsnorm"
    mine.mkdir(parents=True)
    (mine / "notes.txt").write_text("mine")
    result = run_cli("matrix", "--models", "flux", "--ops", "rmsnorm", "--out", str(tmp_path / "m"), cwd=tmp_path)
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert "is not a cell folder sdcompile matrix made" in line and "--out" in line
    assert (mine / "notes.txt").read_text() == "mine"


def test_ctrl_c_ends_the_cells_under_way(tmp_path):
    """The cells run in sessions of their own (a timeout ends a cell's children): an interrupt must end them."""
    import os
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "m"
    proc = subprocess.Popen([sys.executable, "-m", "sdcompile", "matrix", "--models", "flux", "--ops", "rmsnorm",
                             "--out", str(out)], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 120
    while not (out / "cells" / "flux-rmsnorm" / ".sdcompile").exists() and time.monotonic() < deadline:
        time.sleep(0.2)  # the cell's run has started once it made its workspace
    os.kill(proc.pid, signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    time.sleep(1)
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert str(out / "cells" / "flux-rmsnorm") not in ps  # no cell run left behind


def _table(path: Path, *cells: tuple[str, str, str]) -> Path:
    """A table file with cells (model, op, outcome), as `--save` writes it."""
    from sdcompile.core.environment import collect_versions
    from sdcompile.lifecycle.matrix.results import Cell, MatrixReport, Outcome
    from sdcompile.util.serialize import to_jsonable

    report = MatrixReport(
        cells=tuple(Cell(m, o, "2.13.0", Outcome(x), "", "", "", None, None, None, 1.0, "", 0) for m, o, x in cells),
        models=tuple(dict.fromkeys(m for m, _o, _x in cells)), ops=tuple(dict.fromkeys(o for _m, o, _x in cells)),
        shard="", target="MindIE-SD 3.1.0 release (sources x)", sdcompile="0", folder=str(path.parent),
        versions=collect_versions(None))
    path.write_text(json.dumps(to_jsonable(report)))
    return path


def test_a_regression_is_a_cell_the_target_covers_less(tmp_path):
    from sdcompile.lifecycle.matrix.merge import compare, read_table

    old = _table(tmp_path / "old.json", ("flux", "rope", "reused"), ("wan", "rope", "generated"),
                 ("sd3", "rope", "fails"), ("gone", "rope", "reused"))
    new = read_table(_table(tmp_path / "new.json", ("flux", "rope", "generated"), ("wan", "rope", "reused"),
                            ("sd3", "rope", "dead end"), ("added", "rope", "fails")))
    changes = {c.model: c for c in compare(new, old).changes}
    assert changes["flux"].regression  # the tree's own group no longer takes flux: sdcompile had to generate one
    assert not changes["wan"].regression and not changes["sd3"].regression  # better, and failing either way
    assert not changes["gone"].regression and not changes["added"].regression  # a shard measures part of the table
    assert (changes["gone"].after, changes["added"].before) == ("", "")


def test_merge_takes_a_cell_twice_only_when_both_say_the_same(tmp_path):
    from sdcompile.lifecycle.matrix.merge import merge

    a = _table(tmp_path / "a.json", ("flux", "rope", "reused"))
    same = _table(tmp_path / "b.json", ("flux", "rope", "reused"), ("wan", "rope", "fails"))
    assert [c.model for c in merge([a, same]).cells] == ["flux", "wan"]
    other = _table(tmp_path / "c.json", ("flux", "rope", "dead end"))
    with pytest.raises(BadInput, match="both hold flux × rope"):
        merge([a, other])
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(BadInput, match="is not a matrix table"):
        merge([a, tmp_path / "bad.json"])


@pytest.mark.parametrize("width", [80, 200])
def test_the_table_reads_at_80_and_200_columns(tmp_path, width):
    from sdcompile.lifecycle.matrix.merge import read_table
    from sdcompile.lifecycle.matrix.render import render_matrix
    from sdcompile.rendering.output import rendered

    table = read_table(_table(tmp_path / "t.json", *((m, o, "reused") for m in ("flux", "wan", "hunyuanvideo")
                                                     for o in ("rmsnorm", "rope", "adaln", "gelu"))))
    text = rendered(render_matrix, table, width)
    assert all(len(line) <= width for line in text.splitlines())
    assert text.splitlines()[-1] == "INFO: matrix: 12 of 12 cell(s) pass every gate (reused 12)"
    assert "hunyuanvideo" in text


def test_until_scaffold_writes_the_guides_rows_into_their_section(tmp_path):
    """`make outcomes`' own command on one model: the row it writes into a copy of docs/pattern-templates.md is the
    page's row for this torch, and every other row and section of the page is left as it was."""
    from sdcompile.lifecycle.matrix.outcomes import outcome_section, section_rows

    page = ROOT / "docs" / "pattern-templates.md"
    copy = tmp_path / "page.md"
    copy.write_text(page.read_text(encoding="utf-8"), encoding="utf-8")
    result = run_cli("matrix", "--until", "scaffold", "--models", "wan", "--ops", "adaln", "--out",
                     str(tmp_path / "m"), "--markdown", str(copy), "--section", "outcomes {op} {torch-range}",
                     "--save", "t.json", cwd=tmp_path)
    assert result.exit_code == 0, result.stderr
    before, after = page.read_text(encoding="utf-8"), copy.read_text(encoding="utf-8")
    section = outcome_section("adaln")
    assert section_rows(after, section) == {"wan": section_rows(before, section)["wan"]}
    start, end = f"<!-- {section} -->", f"<!-- end of {section} -->"
    assert after.split(start)[0] == before.split(start)[0] and after.split(end)[1] == before.split(end)[1]
    missing = run_cli("matrix", "merge", "t.json", "--markdown", str(copy), "--section", "no such", cwd=tmp_path)
    assert missing.exit_code == 2 and copy.read_text(encoding="utf-8") == after
    (line,) = missing.stderr.strip().splitlines()
    assert "has no section 'no such' (the lines <!-- no such --> and <!-- end of no such -->)" in line


def test_a_model_that_runs_no_such_op_is_no_site(tmp_path):
    """PixArt has no rotary embedding: run stops at analyze with nothing to fuse, which the cell says as such."""
    result = run_cli("matrix", "--models", "pixart", "--ops", "rope", "--out", str(tmp_path / "m"), "--json",
                     cwd=tmp_path)
    assert result.exit_code == 0, result.stderr
    (cell,) = json.loads(result.stdout)["cells"]
    assert (cell["outcome"], cell["phase"]) == ("no site", "analyze") and cell["exit_code"] == 1
