"""Every command the guides in docs/ show runs as written, in order, and exits and prints what the guide says
(tests/docs/guide_commands.py); every guide is an `sdcompile explain` topic; the catalog-generated sections are
current."""

from __future__ import annotations

from pathlib import Path

import pytest
from guide_commands import check as check_commands
from guide_commands import console_blocks, environment, missing_quotes, run_commands, untested_commands

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

# The guides whose commands run here, one test each (they land on both xdist workers).
GUIDES = ("registration-checklist.md", "pattern-templates.md", "test-templates.md", "graph-pattern-entry.md",
          "custom-graph-pass.md", "profiles.md", "copy-elimination.md", "backends.md", "models.md", "benefit.md")
# Guides checked elsewhere: the graph comparison guide's commands by tests/debug/test_debug_docs.py (the same block
# format), the mismatch catalog is generated from its catalog (tests/debug) and shows no commands.
ELSEWHERE = {"graph-comparison-guide.md": "tests/debug/test_debug_docs.py", "mismatch-catalog.md": "generated",
             "lifecycle.md": "tests/docs/test_readme.py", "matrix.md": "tests/matrix/test_matrix.py"}


@pytest.mark.slow
@pytest.mark.parametrize("guide", GUIDES)
def test_guide_commands_run_as_written(guide, mindiesd_cache, tmp_path):
    from sdcompile.core.target.package_cache import scratch_copy

    commands = console_blocks(DOCS / guide)
    assert commands, f"{guide} shows no runnable command"
    repo = scratch_copy(tmp_path / "mindiesd-3.1.0")
    cwd = tmp_path / "work"
    cwd.mkdir()
    problems = check_commands(commands, run_commands(commands, cwd, environment(repo)))
    assert not problems, "\n\n".join(problems)


def test_every_sdcompile_command_in_a_guide_is_run_by_a_test():
    for path in [DOCS / g for g in (*GUIDES, *ELSEWHERE)] + [ROOT / "README.md"]:
        assert not untested_commands(path), f"{path.name} shows sdcompile commands outside ```console blocks: " \
                                            f"{untested_commands(path)}"


def test_every_guide_is_an_explain_topic_printing_the_shipped_file():
    from sdcompile.catalogs import load
    from sdcompile.phases.explain.phase import explain

    topics = load("topics")["topic"]
    docs = {Path(t["doc"]).name: name for name, t in topics.items()}
    assert set(GUIDES) | set(ELSEWHERE) <= set(docs)
    for filename, topic in docs.items():
        if "catalog" in topics[topic]:
            continue
        assert explain(topic).markdown == (DOCS / filename).read_text(encoding="utf-8"), topic


def test_explain_prints_a_guide_through_the_cli(cli):
    out = cli("explain", "backends")
    assert out.exit_code == 0, out.stderr
    assert "The remedies for copy inflation" in out.stdout and "outside MindIE-SD" in out.stdout


def test_catalog_generated_sections_are_current():
    from sdcompile.phases.explain.catalog_tables import SECTIONS, marked_section

    for filename, (name, render) in SECTIONS.items():
        section = marked_section((DOCS / filename).read_text(encoding="utf-8"), name)
        assert section == render(), f"docs/{filename} is stale: python -m sdcompile.phases.explain.catalog_tables"


@pytest.mark.parametrize(("quoted", "output", "missing"), [
    (("a b c",), "x a  b\nc y", []),
    (("phase 1 analyze: pass (…s) — 6 sites",), "phase 1 analyze: pass (5.4s) — 6 sites", []),
    (("starts …",), "starts with something", []),
    (("a … c",), "c then a", ["a … c"]),  # the parts must appear in order
    (("absent",), "present", ["absent"]),
])
def test_quoted_lines_match_in_order_with_ellipses(quoted, output, missing):
    assert missing_quotes(quoted, output) == missing
