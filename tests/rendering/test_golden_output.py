"""Every command's rendering on the Flux and Wan lifecycles at 80 and 200 columns (render_cases.py): no line wider
than the width but a single token, a command or the verdict; no trailing spaces; no number, path or identifier of
the result split across lines; identical rows collapsed; the verdict last; and the golden files of the commands a
new user reads first (`python tests/rendering/render_cases.py` rewrites them after a deliberate change)."""

from __future__ import annotations

import json
import re

import pytest
from render_cases import CASES, DATA, GOLDEN_CASES, WIDTHS, golden_path, load, render

from sdcompile.rendering.closing import VERDICT_WORDS

pytestmark = pytest.mark.torch_independent  # rendering reads the stored results only

_TOKEN = re.compile(r"[\w./:<>\-+,%×]*[\d./_][\w./:<>\-+,%×]*")


def _strings(data) -> list[str]:
    if isinstance(data, dict):
        return [s for v in data.values() for s in _strings(v)]
    if isinstance(data, list):
        return [s for v in data for s in _strings(v)]
    return [data] if isinstance(data, str) else []


def _facts(name: str) -> tuple[set[str], set[str]]:
    """The lines the result holds (commands, code and diffs print whole: one a line, never wrapped) and its tokens:
    numbers, paths, identifiers (a `.`, `/`, `_` or a digit in them) of 4+ characters."""
    strings = _strings(json.loads((DATA / f"{name}.json").read_text("utf-8")))
    whole = {line.strip() for s in strings for line in s.splitlines() if line.strip()}
    tokens = {t.strip(",.:;()") for s in strings for t in s.split()}
    return whole, {t for t in tokens if len(t) >= 4 and _TOKEN.fullmatch(t)}


def _printed_whole(line: str, whole: set[str]) -> bool:
    """A command, source or diff line of the result, maybe after a short label (`# replacement: `)."""
    text = line.strip()
    return any(text[i:].strip() in whole for i in range(min(len(text), 17)))


def split_tokens(text: str, tokens: set[str]) -> list[str]:
    """Tokens broken across two lines: a line (or a table cell) ends with a proper prefix of one, 3+ characters,
    and the next line (or the same cell on it) starts with the rest."""
    lines = [line.rstrip() for line in text.splitlines()]
    broken = []
    for line, following in zip(lines, lines[1:], strict=False):
        cells, below = re.split("[│┃]", line), re.split("[│┃]", following)
        for k, cell in enumerate(cells):
            words = cell.split()
            after = (below[k] if k < len(below) else "") if len(cells) > 1 else following
            if not words or len(words[-1]) < 3 or not after.split():
                continue
            last, first = words[-1], after.split()[0]
            for token in tokens:
                rest = token[len(last):]
                if token.startswith(last) and rest and first.startswith(rest[:4]) \
                        and last not in (token.split("/")[0], token.split(".")[0]):
                    broken.append(f"{token!r} as {last!r} / {rest!r}")
    return broken


def layout_problems(name: str, text: str, width: int) -> list[str]:
    whole, tokens = _facts(name)
    lines = text.rstrip("\n").split("\n")
    problems = [f"trailing spaces: {line!r}" for line in lines if line != line.rstrip()]
    for line in lines[:-1]:  # the verdict is one line at any width (a log greps it)
        if len(line) > width and len(line.split()) > 1 and not _printed_whole(line, whole):
            problems.append(f"{len(line)} > {width} columns: {line!r}")
    if not lines[-1].startswith(VERDICT_WORDS):
        problems.append(f"the last line is not a verdict: {lines[-1]!r}")
    verdicts = [line for line in lines if line.startswith(tuple(f"{w}:" for w in VERDICT_WORDS))]
    if len(verdicts) > 1:
        problems.append(f"{len(verdicts)} verdict lines: {verdicts}")
    cut = {w for w in re.split(r"[\s│┃]+", text) if len(w) > 2 and w.endswith("…")
           and any(t.startswith(w[:-1]) and t != w for t in tokens)}
    return problems + [f"split: {s}" for s in split_tokens(text, tokens)] + [f"cut short: {w}" for w in sorted(cut)]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_every_command_reads_well_at_80_and_200_columns(name, width):
    text = render(name, width)
    assert not layout_problems(name, text, width), "\n".join(layout_problems(name, text, width)) + "\n\n" + text


@pytest.mark.parametrize("name", sorted(CASES))
def test_results_read_back_from_json_unchanged(name):
    """The stored document is the result --json prints, its `verdict` the word of the closing line --json takes from
    the typed result, which is the line the rendering ends with."""
    from render_cases import _named

    from sdcompile.rendering.closing import VERDICT_WORDS
    from sdcompile.rendering.output import json_document

    case, result = CASES[name], load(name)
    verdict = _named(case.verdict_function)(result)
    assert verdict.word in VERDICT_WORDS
    assert render(name, 10_000).rstrip("\n").splitlines()[-1] == verdict.line
    assert json_document(result, verdict) == json.loads((DATA / f"{name}.json").read_text("utf-8"))


@pytest.mark.parametrize(("name", "sites"), [("flux.scaffold", 6), ("wan.scaffold", 4)])
@pytest.mark.parametrize("width", WIDTHS)
def test_identical_site_rows_collapse_into_one_with_a_count(name, sites, width):
    text = render(name, width)
    assert f"{sites} sites:" in text
    result = load(name)
    assert len({r.site for r in result.sites}) == sites
    named = sum(len(re.findall(rf"(?<![\w.]){re.escape(r.site)}(?![\w.])", text)) for r in result.sites if r.site)
    assert named == sites  # each site named once: one row for the six


def test_run_lists_what_was_not_exercised_and_the_report_above_its_verdict():
    lines = render("flux.run", 80).rstrip("\n").split("\n")
    at = {key: next(i for i, line in enumerate(lines) if line.startswith(key))
          for key in ("not exercised on this machine", "report: ", "PASS: every gate passed")}
    assert at["not exercised on this machine"] < at["report: "] < at["PASS: every gate passed"] == len(lines) - 1
    # Wan passes with a finding (its copy inflation is the compile's own): the verdict repeats it, the commands that
    # show it come before what was not exercised
    found = render("wan.run", 80).rstrip("\n").split("\n")
    assert found[-1].startswith("PASS: every gate passed; the compile's own copy inflation stays")
    nxt = found.index("next:")
    assert nxt < found.index("not exercised on this machine:")
    assert found[nxt + 1].startswith("  sdcompile copy-audit ") and len(found[nxt + 1]) > 80  # one line, whole


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", GOLDEN_CASES)
def test_golden_output(name, width):
    expected = golden_path(name, width).read_text("utf-8")
    assert render(name, width) == expected, (
        f"{golden_path(name, width).name} differs: if the change is meant, `python tests/rendering/render_cases.py` "
        "rewrites the golden files (review their diff)")


def test_the_checks_catch_what_rich_did_at_80_columns():
    """A plain rich table folds a path mid-token and pads its lines; the checks above say so."""
    import io

    from rich.console import Console
    from rich.table import Table

    table = Table(title="reuse check")
    for column in ("site", "production", "needs"):
        table.add_column(column, overflow="fold")
    table.add_row("single_transformer_blocks.0.attn.norm_k", "WanRmsNormPatternGroup: replaced (6/8)", "covered")
    out = io.StringIO()
    Console(file=out, width=40).print(table)
    tokens = {"single_transformer_blocks.0.attn.norm_k", "WanRmsNormPatternGroup:"}
    assert split_tokens(out.getvalue(), tokens)
    assert any(line != line.rstrip() for line in out.getvalue().splitlines())
