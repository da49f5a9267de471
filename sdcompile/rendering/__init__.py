"""Presentation shared by the phases' renderers: JSON output, version lines, profile tables."""
