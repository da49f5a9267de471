"""docs/mismatch-catalog.md is generated from the catalog; every command of docs/graph-comparison-guide.md runs and
exits as the guide says, printing the lines the guide quotes."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from torch_ranges import holds_here

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "graph-comparison-guide.md"


def test_mismatch_catalog_doc_is_generated_from_the_catalog():
    from sdcompile.phases.explain.catalog_page import catalog_markdown

    assert (ROOT / "docs" / "mismatch-catalog.md").read_text(encoding="utf-8") == catalog_markdown(), (
        "docs/mismatch-catalog.md is stale: python -m sdcompile.phases.explain.catalog_page > docs/mismatch-catalog.md")


def test_every_catalog_type_and_cause_is_documented_and_explained():
    from sdcompile.core.graph.mismatch import catalog
    from sdcompile.phases.explain.phase import explain

    text = (ROOT / "docs" / "mismatch-catalog.md").read_text(encoding="utf-8")
    types = catalog()
    assert [t.number for t in types] == [1, 2, 3, 4, 5, 6, 7]
    for t in types:
        assert f"## Type {t.number}: {t.name}" in text
        assert all(f"`{c.key}`" in text for c in t.causes)
        assert explain("mismatch", str(t.number)).types[0].name == t.name


def _guide_commands() -> list[tuple[str, int, list[str]]]:
    blocks = re.findall(r"```console([^\n]*)\n(.*?)```", GUIDE.read_text(encoding="utf-8"), flags=re.S)
    commands = []
    for info, block in blocks:
        if not holds_here(info):  # a block for another torch range
            continue
        lines = block.strip().splitlines()
        assert lines[0].startswith("$ sdcompile "), lines[0]
        exit_lines = [line for line in lines if re.fullmatch(r"\(exit \d+\)", line.strip())]
        assert len(exit_lines) == 1, f"a guide block must state its exit code: {lines[0]}"
        expected = int(exit_lines[0].strip()[6:-1])
        quoted = [line for line in lines[1:] if line not in exit_lines]
        commands.append((lines[0][2:], expected, quoted))
    return commands


COMMANDS = _guide_commands()


def _normal(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.slow
@pytest.mark.parametrize(("command", "expected", "quoted"), COMMANDS, ids=[c[0][10:60] for c in COMMANDS])
def test_guide_command(cli, mindiesd_cache, tmp_path, command, expected, quoted):
    args = shlex.split(command)[1:]
    result = cli(*args, env={"SDCOMPILE_REPO": str(mindiesd_cache), "SDCOMPILE_WORKDIR": str(tmp_path)})
    assert result.exit_code == expected, result.stdout[-3000:] + result.stderr[-3000:]
    stdout = _normal(result.stdout)
    for line in quoted:  # a quoted line ending in "…" is quoted up to there
        assert _normal(line.rstrip("…")) in stdout, f"the guide quotes a line the command does not print:\n{line}"


def test_guide_covers_the_method():
    text = GUIDE.read_text(encoding="utf-8")
    for needle in ("compile_subgraph_reason", "<stage>.<model>.txt", "metadata.json", "PatternPrettyPrinter",
                   "--stage after-freezing", "--pattern-file", "explain mismatch"):
        assert needle in text
    assert len(COMMANDS) >= 5
