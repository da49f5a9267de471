"""The package version (read by the CLI, the reports and generated files; pyproject.toml carries the same)."""

__version__ = "0.2.0"
