"""Data moved, as scaffold, verify and benefit print it: byte sizes, and a replacement weighed against its chain."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape


def byte_size(value: float) -> str:
    """Bytes in the largest unit that keeps the number at least 1 (B, KB, MB, GB; powers of ten)."""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(value) >= size:
            return f"{value / size:,.2f} {unit}"
    return f"{value:,.0f} B"


def chain_vs_replacement(chain: int, replacement: int, materialised: int) -> str:
    """One call of a chain and of its replacement (testing.data_movement), and what it predicts (rich markup)."""
    line = f"chain {byte_size(chain)}, replacement {byte_size(replacement)} per call"
    if materialised:
        line += f" ({byte_size(materialised)} of it copies, casts or fills the chain never made)"
    if replacement > chain:
        cause = "R2, input materialisation" if materialised else "R5, a slower kernel"
        line += (f": [yellow]the replacement moves more than the chain[/], a hit likely to lose ({cause}); weigh it "
                 "on a profile with `sdcompile benefit`")
    return line


def print_data_moved(console: Console, moved: list) -> None:
    """(pattern, DataMoved) pairs: each replacement that moves more data than its chain by name, the others
    counted (the static half of hit is not gain)."""
    more = [(name, m) for name, m in moved if m.moves_more]
    for name, m in more:
        console.print(f"data moved by {escape(name)}: "
                      f"{chain_vs_replacement(m.chain_bytes, m.replacement_bytes, m.materialised_bytes)}",
                      highlight=False)
    if len(more) < len(moved):
        console.print(f"data moved: {len(moved) - len(more)} of {len(moved)} replacement(s) move no more than their "
                      "chain per call", highlight=False)
