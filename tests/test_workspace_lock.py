"""Two processes recording phases of one pair at once: every record lands (state.json is read-modify-written)."""

import subprocess
import sys

from sdcompile.workspace.store import Workspace

RECORD_MANY = """
import sys
from sdcompile.workspace.store import Workspace

ws = Workspace(sys.argv[1])
for i in range(40):
    ws.record("flux", "rmsnorm", sys.argv[2], "pass", f"{sys.argv[2]} #{i}")
"""


def test_concurrent_records_of_one_pair_all_land(tmp_path):
    procs = [subprocess.Popen([sys.executable, "-c", RECORD_MANY, str(tmp_path), phase])
             for phase in ("analyze", "scaffold", "register")]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    state = Workspace(tmp_path).load_pair("flux", "rmsnorm")
    assert {name: rec.summary for name, rec in state.phases.items()} == {
        "analyze": "analyze #39", "scaffold": "scaffold #39", "register": "register #39"}
