"""Makes this folder's helpers (profile_pairs) and the profile fixtures' (profile_recount) importable by its tests."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "profiles"))
