from pathlib import Path

from sdcompile.cli.reference import render

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_cli_reference_is_current():
    assert (DOCS / "cli.md").read_text() == render(), "docs/cli.md is stale: run `make docs`"


def test_every_command_is_documented():
    text = (DOCS / "cli.md").read_text()
    from sdcompile.cli.app import COMMANDS

    for name, _, _ in COMMANDS:
        assert f"## `sdcompile {name}`" in text
