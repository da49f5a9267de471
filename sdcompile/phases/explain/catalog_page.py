"""docs/mismatch-catalog.md, generated from catalogs/mismatches.toml (`make docs`; a test keeps it current).

    python -m sdcompile.phases.explain.catalog_page > docs/mismatch-catalog.md
"""

from __future__ import annotations

from sdcompile.phases.explain.phase import explain
from sdcompile.phases.explain.render import catalog_markdown as _render


def catalog_markdown() -> str:
    """The page's Markdown: every mismatch type, as `sdcompile explain mismatch` returns them."""
    return _render(explain("mismatch"))


if __name__ == "__main__":  # pragma: no cover - the documented generator
    import sys

    sys.stdout.write(catalog_markdown())
