"""Makes the guides' command runner (tests/docs/guide_commands.py) importable: the matrix guide's commands run here."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs"))
