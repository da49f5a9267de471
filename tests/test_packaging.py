"""The package ships its templates, catalogs and guides: checked on a real, non-editable install in a fresh venv."""

import subprocess
import sys
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_every_subpackage_is_listed_in_pyproject():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    on_disk = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for p in (ROOT / "sdcompile").rglob("__init__.py")
        if "standin" not in p.parts  # the emulated torch_npu is package data, not an sdcompile subpackage
    }
    assert on_disk | {"sdcompile.templates", "sdcompile.docs"} == listed


@pytest.mark.slow
def test_non_editable_install_finds_templates_catalogs_and_guides(tmp_path):
    wheel_dir = tmp_path / "wheel"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheel_dir),
         str(ROOT)],
        check=True, capture_output=True, cwd=tmp_path,
    )
    wheel = next(wheel_dir.glob("sdcompile-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {f"sdcompile/templates/{p.name}" for p in (ROOT / "templates").iterdir() if p.is_file()}
    shipped |= {f"sdcompile/catalogs/{p.name}" for p in (ROOT / "sdcompile/catalogs").glob("*.toml")}
    shipped |= {f"sdcompile/docs/{p.name}" for p in (ROOT / "docs").glob("*.md")}
    assert shipped <= names, sorted(shipped - names)

    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True, capture_output=True)
    probe = (
        "from importlib.resources import files\n"
        "import sdcompile.catalogs as c\n"
        "t = files('sdcompile.templates')\n"
        "print(sorted(p.name for p in t.iterdir() if p.is_file() and not p.name.endswith('.pyc')))\n"
        "print(len(c.load('backends')['backend']))\n"
        "from sdcompile.phases.explain.phase import explain\n"
        "guides = [t for t, e in c.load('topics')['topic'].items() if 'catalog' not in e]\n"
        "print(sum(len(explain(t).markdown) > 1000 for t in guides), len(guides))\n"
    )
    out = subprocess.run([py, "-c", probe], check=True, capture_output=True, text=True, cwd=tmp_path).stdout
    listed, backends, guides = out.strip().splitlines()
    assert "site-packages" not in listed  # names only
    for name in (p.name for p in (ROOT / "templates").iterdir() if p.is_file()):
        assert name in listed
    assert backends == "4"
    printed, topics = guides.split()  # `sdcompile explain TOPIC` reads every guide from the installed package
    assert printed == topics and int(topics) >= 7
