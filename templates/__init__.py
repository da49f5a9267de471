"""Jinja2 templates for generated pattern files, graph passes and tests (shipped as package data)."""
