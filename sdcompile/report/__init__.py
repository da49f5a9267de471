"""Rendering: rich tables, JSON, Markdown/HTML reports. Core code never prints; renderers do."""
