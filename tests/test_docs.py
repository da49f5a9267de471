from pathlib import Path

from sdcompile.cli.reference import render

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_cli_reference_is_current():
    assert (DOCS / "cli.md").read_text() == render(), "docs/cli.md is stale: run `make docs`"


def test_every_command_is_documented():
    text = (DOCS / "cli.md").read_text()
    from sdcompile.cli.app import COMMANDS

    for name, *_ in COMMANDS:
        assert f"## `sdcompile {name}`" in text


def test_every_environment_variable_sdcompile_reads_is_in_the_reference():
    import re

    from sdcompile.cli.reference import ENVIRONMENT

    source = "\n".join(p.read_text(encoding="utf-8") for p in (DOCS.parent / "sdcompile").rglob("*.py"))
    read = set(re.findall(r"\bSDCOMPILE_[A-Z_]+\b", source))
    assert read and read == {name for name, _ in ENVIRONMENT}, read ^ {name for name, _ in ENVIRONMENT}
