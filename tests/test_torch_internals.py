"""torch's private APIs are reached through sdcompile.core.torchcompat only, and the supported range is one fact."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

from sdcompile.core.torchcompat.support import SUPPORTED_TORCH, torch_support

ROOT = Path(__file__).resolve().parents[1]
PRIVATE = re.compile(r"^torch\._(inductor|dynamo|guards|dispatch|functorch|subclasses)\b")


def _private_uses(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        elif isinstance(node, ast.Attribute):
            parts = []
            value = node
            while isinstance(value, ast.Attribute):
                parts.append(value.attr)
                value = value.value
            if isinstance(value, ast.Name):
                names = [".".join([value.id, *reversed(parts)])]
        found += [f"{path.relative_to(ROOT)}:{node.lineno}: {n}" for n in names if PRIVATE.match(n)]
    return found


def test_only_torchcompat_touches_torch_internals():
    offenders = []
    for path in sorted((ROOT / "sdcompile").rglob("*.py")):
        if "torchcompat" in path.parts:
            continue
        offenders += _private_uses(path)
    assert offenders == [], "use sdcompile.core.torchcompat instead:\n" + "\n".join(sorted(set(offenders)))


def test_the_checker_sees_each_form(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("import torch._dynamo\nfrom torch._inductor import pattern_matcher\nx = torch._guards.X\n")
    # relative_to(ROOT) needs a file under the repository; read it through a copy of the function's logic
    lines = {int(u.split(":")[1]) for u in _private_uses_outside(sample)}
    assert lines == {1, 2, 3}


def _private_uses_outside(path: Path) -> list[str]:
    global ROOT
    saved, ROOT = ROOT, path.parent
    try:
        return _private_uses(path)
    finally:
        ROOT = saved


def test_pyproject_declares_the_supported_range():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (lo_major, lo_minor), (hi_major, hi_minor) = SUPPORTED_TORCH
    assert f"torch>={lo_major}.{lo_minor},<{hi_major}.{hi_minor + 1}" in deps


@pytest.mark.parametrize(("version", "supported"), [
    ("2.6.0", False), ("2.7.1", True), ("2.8.0", False), ("2.9.0+cu128", True), ("2.13.0+cpu", True),
    ("2.14.1", False), ("nightly", False),
])
def test_support_window(version, supported):
    assert torch_support(version).supported is supported


def test_the_catalogs_torch_facts_agree_with_pyproject():
    from sdcompile.catalogs import load

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    own = load("torch_variants")["sdcompile"]
    assert own["declared"] in deps
    assert all(torch_support(f"{r}.0").in_declared for r in own["tested"])
