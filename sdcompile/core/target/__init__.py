"""The MindIE-SD source tree sdcompile acts on: discovery, reading, loading, and source edits."""
