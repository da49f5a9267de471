"""What scaffold does with one op on every zoo model, as a Markdown table for docs/pattern-templates.md.

    python -m sdcompile.phases.scaffold.outcome_table --op adaln [MODEL ...]   # rows on the running torch
    python -m sdcompile.phases.scaffold.outcome_table --op adaln --write docs/pattern-templates.md

Each row is a real `scaffold --dry-run` on the model (per site: covered by the target's own groups, generated,
not a site, or refused and why), with --path auto: the carrier column says what it generated — a
register_replacement pattern group, or a GraphPatternEntry carrier where no traced pattern holds the chains on the
running torch (never a custom graph pass: only --path graph-pass writes one). The guide keeps one table per torch
state; tests regenerate some rows and compare.
"""

from __future__ import annotations

import argparse
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from sdcompile.core.target.package_cache import ensure_unpacked, scratch_copy
from sdcompile.core.torchcompat.behaviours import holds
from sdcompile.core.zoo.models import zoo_entries
from sdcompile.phases.choices import CARRIER_NAMES
from sdcompile.phases.scaffold.phase import scaffold
from sdcompile.phases.scaffold.render import need_word, reason_text
from sdcompile.phases.scaffold.results import Need
from sdcompile.util.log import library_warnings_to_log

HEADER = ("| model | sites | carrier | outcome | refused (why) |", "|---|---|---|---|---|")


def state(op: str) -> str:
    """Which table the running torch measures: registration decomposes (2.12 and later), or registers as written."""

    return "torch>=2.12" if holds("decomposition-override") else "torch<2.12"


def markers(op: str, torch_state: str) -> tuple[str, str]:
    return f"<!-- outcomes {op} {torch_state} -->", f"<!-- end of outcomes {op} {torch_state} -->"


def section_rows(page: str, op: str, torch_state: str) -> dict[str, str]:
    """model -> its row in the guide's table for `torch_state`."""
    start, end = markers(op, torch_state)
    body = page[page.index(start) + len(start):page.index(end)]
    return {line.split("|")[1].strip(): line for line in body.splitlines() if line.startswith("| ")
            and not line.startswith(HEADER[0])}


def write_section(page_path: Path, op: str, torch_state: str, table: str) -> None:
    page = page_path.read_text(encoding="utf-8")
    start, end = markers(op, torch_state)
    head, rest = page.split(start, 1)
    page_path.write_text(f"{head}{start}\n{table}\n{end}{rest.split(end, 1)[1]}", encoding="utf-8")


@dataclass(frozen=True)
class OutcomeRow:
    model: str
    sites: int  # sites scaffold counts (rows that are not "not a site")
    decision: str
    counts: tuple[tuple[str, int], ...]  # need -> sites, in first-seen order
    refusals: tuple[str, ...]  # distinct refusal reasons, shortened
    carriers: tuple[str, ...] = ()  # what was generated (choices.CARRIER_NAMES), none for a reuse

    def markdown(self) -> str:
        counts = ", ".join(f"{n} {need}" for need, n in self.counts)
        why = "; ".join(self.refusals) or "–"
        carrier = ", ".join(self.carriers) or "–"
        return (f"| {self.model} | {self.sites} | {carrier} | {self.decision}{': ' + counts if counts else ''} "
                f"| {why} |")


def short_reason(reason: str, limit: int = 90) -> str:
    """A refusal's first clause (up to its first colon, semicolon or parenthesis: node names differ per model),
    cut at a word under `limit` characters."""
    head = reason.split(":")[0].split(";")[0].split(" (")[0].strip()
    if len(head) <= limit:
        return head
    return head[:limit].rsplit(" ", 1)[0] + " …"


def outcome_row(model: str, op: str, path: str, repo: Path, workdir: Path) -> OutcomeRow:
    return row_of(model, scaffold(model=model, op=op, repo=repo, workdir=workdir, dry_run=True, path=path))


def row_of(model: str, result) -> OutcomeRow:
    """The guide's row for one `scaffold --dry-run` result (a ScaffoldResult)."""

    rows = [r for r in result.sites if r.need != Need.NOT_A_SITE]
    counts = Counter(need_word(r.need) for r in rows)
    # one refusal per code (and per message, for a chain writer's own words), worded as the table shows it
    refused = {(r.reason.code, r.reason.facts.get("message")): r.reason for r in rows if r.need == Need.CANNOT}
    refusals = tuple(dict.fromkeys(short_reason(reason_text(r)) for r in refused.values()))
    gate = f", gate {result.gate}" if result.decision == "generate" else ""
    carriers = tuple(dict.fromkeys(CARRIER_NAMES[v.path] for v in result.variants))
    return OutcomeRow(model, len(rows), result.decision + gate, tuple(counts.items()), refusals, carriers)


def measuring_path(op: str) -> str:
    """The path the table is measured on: --path auto, what a user gets by default."""
    return "auto"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--op", required=True)
    parser.add_argument("--write", type=Path, help="replace this torch's table in that page")
    parser.add_argument("models", nargs="*")
    args = parser.parse_args(argv)

    ensure_unpacked()
    lines = list(HEADER)
    with tempfile.TemporaryDirectory() as tmp, library_warnings_to_log():
        repo = scratch_copy(Path(tmp) / "tree")
        path = measuring_path(args.op)
        for model in args.models or list(zoo_entries()):
            lines.append(outcome_row(model, args.op, path, repo, Path(tmp) / "ws").markdown())
            print(lines[-1], flush=True)
    if args.write:
        write_section(args.write, args.op, state(args.op), "\n".join(lines))


if __name__ == "__main__":
    main()
