"""docs/api.md's example runs as written in a fresh process and prints what the page says; the API names the
CLI's commands and `import sdcompile` stays light."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from guide_commands import missing_quotes

DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"


@pytest.mark.slow
def test_the_example_prints_what_the_page_says(mindiesd_tree, tmp_path):
    text = DOC.read_text(encoding="utf-8")
    [code] = re.findall(r"```python\n(.*?)```", text, re.S)
    [expected] = re.findall(r"```text\n(.*?)```", text, re.S)
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "SDCOMPILE_REPO": str(mindiesd_tree)})
    assert proc.returncode == 0, proc.stderr
    assert missing_quotes(tuple(expected.splitlines()), proc.stdout) == [], proc.stdout


def test_every_function_is_a_command_and_the_package_import_is_light():
    proc = subprocess.run([sys.executable, "-c", (
        "import json, sys, sdcompile\n"
        "print(json.dumps([[m for m in ('torch', 'diffusers') if m in sys.modules], sdcompile.__all__]))\n")],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    heavy, names = json.loads(proc.stdout)
    assert heavy == []
    from sdcompile.cli.app import COMMANDS

    commands = {entry.module for entry in COMMANDS}
    api = set(names) - {"__version__", "check_registration"}  # register --check
    assert api <= commands, api - commands
    assert {"analyze", "scaffold", "register", "verify", "debug", "integrate", "copy_audit", "run"} <= api


def test_every_result_type_the_table_names_is_where_it_says():
    """The table's `returns` column names importable classes (it rots silently when code moves)."""
    import importlib

    table = DOC.read_text(encoding="utf-8").split("| function | command |")[1].split("\n\n")[0]
    names = re.findall(r"`((?:phases|lifecycle|core)\.[\w.<>]+)`", table)
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    assert len(rows) >= 9 and len(names) >= 10, table
    for dotted in names:
        if "<command>" in dotted:  # phases.<command>.results.StatusReport, DoctorReport, BackendsReport
            continue
        module, _, cls = f"sdcompile.{dotted}".rpartition(".")
        assert isinstance(getattr(importlib.import_module(module), cls), type), dotted
    for command, cls in (("status", "StatusReport"), ("doctor", "DoctorReport"), ("backends", "BackendsReport")):
        assert isinstance(getattr(importlib.import_module(f"sdcompile.phases.{command}.results"), cls), type)
