"""The user guides, shipped as the package `sdcompile.docs` so `sdcompile explain TOPIC` prints them from an
installed sdcompile as well as from a checkout (pyproject.toml maps this folder)."""
