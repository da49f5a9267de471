"""The width-aware rendering every renderer shares: wrapping at spaces only, FitTable's three layouts and its
collapsed rows, the sink's width off a terminal and its trimmed lines."""

from __future__ import annotations

import io

import pytest
from rich.text import Text

from sdcompile.rendering.layout import wrap
from sdcompile.rendering.output import SinkConsole, output_width, rendered, trim_line
from sdcompile.rendering.tables import WIDE, FitTable

pytestmark = pytest.mark.torch_independent

PATH = "/tmp/w18/flux/.sdcompile/flux/rmsnorm/run/mindiesd-3.1.0/mindiesd/compilation/patterns"


@pytest.mark.parametrize("width", [10, 20, 40, 80])
def test_wrapping_splits_no_token_and_keeps_a_longer_one_whole(width):
    text = f"  target    MindIE-SD 3.1.0 at {PATH} (16 groups, 0.999994 cosine, WanRmsNormPattern-torch.bfloat16)"
    lines = [line.plain for line in wrap(Text(text), width)]
    assert " ".join(" ".join(lines).split()) == " ".join(text.split())  # nothing lost, nothing split
    for line in lines:
        assert len(line) <= width or len(line.split()) == 1, line
    assert all(token in lines_tokens(lines) for token in text.split())


def lines_tokens(lines):
    return {t for line in lines for t in line.split()}


def test_a_wrapped_label_line_continues_under_its_value():
    lines = [line.plain for line in wrap(Text("  versions  torch 2.13.0 · diffusers 0.42.1 · Python 3.11.7"), 40)]
    assert lines == ["  versions  torch 2.13.0 · diffusers", "            0.42.1 · Python 3.11.7"]


def test_trailing_spaces_go_and_styles_stay():
    assert trim_line("title   ") == "title"
    assert trim_line("\x1b[1mtitle\x1b[0m   \x1b[0m  ") == "\x1b[1mtitle\x1b[0m\x1b[0m"
    assert trim_line("  indented") == "  indented"


def test_the_width_off_a_terminal(monkeypatch):
    class Pipe(io.StringIO):
        def __init__(self, tty: bool):
            super().__init__()
            self.tty = tty

        def isatty(self):
            return self.tty

    import sdcompile.rendering.output as output

    monkeypatch.setenv("COLUMNS", "133")
    assert output_width(Pipe(False), Pipe(True)) == 133
    assert output_width(Pipe(True), Pipe(False)) is None  # a terminal: rich asks it
    monkeypatch.delenv("COLUMNS")
    monkeypatch.setattr(output, "_terminal_width", lambda stream: 97 if stream.isatty() else None)
    assert output_width(Pipe(False), Pipe(True)) == 97  # piped, with the terminal on stderr
    assert output_width(Pipe(False), Pipe(False)) == 80  # a CI log


def _table(rows=3, collapse=None) -> FitTable:
    table = FitTable(title="reuse check", head=2, collapse=collapse)
    for column in ("dtype", "site", "implementation", "nodes", "production", "needs"):
        table.add_column(column)
    for i in range(rows):
        table.add_row("bf16", f"transformer_blocks.{i}.attn.norm_q", "torch.nn.RMSNorm", "8",
                      "replaced\nWanRmsNormPatternGroup: WanRmsNormPattern-torch.bfloat16", "covered")
    return table


def test_a_table_that_fits_stays_a_table_a_wide_one_is_stacked_below_wide():
    table = _table()
    assert table.layout(200, table.rows) == ("table", None)
    assert table.layout(80, table.rows) == ("stacked", None)
    mode, widths = table.layout(WIDE, table.rows)
    assert mode == "table" and widths is not None
    mins, _ = table.measure(table.rows)
    assert all(w >= m for w, m in zip(widths, mins, strict=True))  # every column holds its longest token
    stacked = rendered(lambda console, t: console.print(t), table, 60)
    assert "transformer_blocks.0.attn.norm_q" in stacked and "  production: replaced" in stacked
    assert "┃" not in stacked and all(len(line) <= 60 for line in stacked.splitlines())


def test_identical_rows_collapse_into_one_with_a_count():
    table = _table(collapse=("site", "sites"))
    rows = table.collapsed_rows()
    assert len(rows) == 1
    assert rows[0][1] == ("3 sites: transformer_blocks.0.attn.norm_q, transformer_blocks.1.attn.norm_q, "
                          "transformer_blocks.2.attn.norm_q")
    assert len(_table(collapse=None).collapsed_rows()) == 3


def test_the_sink_never_crops_a_long_token_and_trims_padding():
    out = io.StringIO()
    console = SinkConsole(out, 30)
    console.print(f"target: {PATH}")
    console.print(FitTable(title="a title"))
    console.file.flush()
    lines = out.getvalue().splitlines()
    assert lines[:2] == ["target:", f"  {PATH}"]
    assert all(line == line.rstrip() for line in lines)


def test_brackets_in_what_a_renderer_interpolates_are_kept_and_its_styles_still_apply():
    from sdcompile.phases.analyze.render import reason_text
    from sdcompile.phases.analyze.results import Why
    from sdcompile.util.reasons import Reason

    absent = reason_text(Reason.of(Why.ABSENT, title="RoPE", modulation=False))
    source = "freqs = freqs_cis[idx].to(x.device)"
    table = FitTable()
    table.add_column("site")
    table.add_column("source")
    table.add_row("[bold]blocks.0[/]", source)
    out = rendered(lambda console, _: (console.print(f"\n[bold]RoPE[/]: [red]absent[/] — {absent}"),
                                       console.print(f"  source: {source}   toml: [inputs] x = {{ ones = [1, 16] }}"),
                                       console.print(table)), None, 200)
    assert "([primitive] in catalogs/ops/rope.toml)" in out  # a catalog's table name, not a style
    assert source in out and "toml: [inputs] x = { ones = [1, 16] }" in out
    assert "[bold]" not in out and "[red]" not in out and "RoPE: absent" in out and "blocks.0" in out
