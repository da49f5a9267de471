"""The self-contained HTML report of profile comparisons (integrate and copy-audit together)."""
