"""What `matrix --until scaffold` measures per cell: scaffold's outcome on a model (sites, carrier, decision and the
reasons it refused sites), as the per-model tables of docs/pattern-templates.md show it, and the marked sections of
a Markdown page such a table is written into (`--markdown PAGE --section NAME`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from sdcompile.core.torchcompat.behaviours import holds
from sdcompile.phases.choices import CARRIER_NAMES, Decision
from sdcompile.phases.scaffold.render import need_word, reason_text
from sdcompile.phases.scaffold.results import Need, ScaffoldResult
from sdcompile.util.errors import BadInput

HEADER = ("| model | sites | carrier | outcome | refused (why) |", "|---|---|---|---|---|")


@dataclass(frozen=True)
class OutcomeRow:
    """scaffold's outcome on one model for one op."""

    model: str
    sites: int  # sites scaffold counts (rows that are not "not a site")
    decision: str  # scaffold's decision, with its gate when it generates
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


def row_of(model: str, result: ScaffoldResult) -> OutcomeRow:
    """The table's row for one `scaffold --dry-run` result."""
    rows = [r for r in result.sites if r.need != Need.NOT_A_SITE]
    counts = Counter(need_word(r.need) for r in rows)
    # one refusal per code (and per message, for a chain writer's own words), worded as the table shows it
    refused = {(r.reason.code, r.reason.facts.get("message")): r.reason for r in rows
               if r.need in (Need.CANNOT, Need.OTHER_MATH)}  # a site left as it is says why, as a refused one does
    refusals = tuple(dict.fromkeys(short_reason(reason_text(r)) for r in refused.values()))
    gate = f", gate {result.gate}" if result.decision == Decision.GENERATE else ""
    carriers = tuple(dict.fromkeys(CARRIER_NAMES[v.path] for v in result.variants))
    return OutcomeRow(model, len(rows), result.decision + gate, tuple(counts.items()), refusals, carriers)


def torch_range() -> str:
    """Which of the guides' two torch states the running torch is in: registration decomposes the pattern (2.12 and
    later), or registers it as written. A section name's `{torch-range}` is this."""
    return "torch>=2.12" if holds("decomposition-override") else "torch<2.12"


def outcome_section(op: str, torch_state: str | None = None) -> str:
    """The name of the guide's section holding `op`'s table for a torch state (default: the running torch's)."""
    return f"outcomes {op} {torch_state or torch_range()}"


def markers(section: str) -> tuple[str, str]:
    return f"<!-- {section} -->", f"<!-- end of {section} -->"


def section_rows(page: str, section: str) -> dict[str, str]:
    """model -> its row in the table of the page's `section`."""
    start, end = markers(section)
    body = page[page.index(start) + len(start):page.index(end)]
    return {line.split("|")[1].strip(): line for line in body.splitlines() if line.startswith("| ")
            and not line.startswith(HEADER[0])}


def replace_section(page: str, section: str, table: str, where: Path) -> str:
    """`page` with the text between `section`'s markers replaced by `table`; BadInput when it has no such section."""
    start, end = markers(section)
    if start not in page or end not in page.split(start, 1)[-1]:
        raise BadInput(f"{where} has no section {section!r} (the lines {start} and {end})",
                       "add the two marker lines where the table goes, or leave out --section")
    head, rest = page.split(start, 1)
    return f"{head}{start}\n{table}\n{end}{rest.split(end, 1)[1]}"
