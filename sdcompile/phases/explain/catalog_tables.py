"""The catalogs as Markdown tables: backends and Copy options for docs/backends.md and docs/copy-elimination.md, the
fused ops and scaffold's recipes for docs/pattern-templates.md, the emulated torch_npu behaviours and the mindiesd
stand-ins for docs/npu-emulation.md.

    python -m sdcompile.phases.explain.catalog_tables      # in a checkout: rewrites the marked section of each guide

Each guide holds its table between a BEGIN and an END marker; tests/docs fails when a table is stale.
"""

from __future__ import annotations

from pathlib import Path

from sdcompile.catalogs import load
from sdcompile.core.npu.emulation.behaviours import CATALOG
from sdcompile.phases.scaffold.reference import fused_op_reference
from sdcompile.util.fsutil import atomic_write_text


def _begin(name: str, catalog: str) -> str:
    return (f"<!-- {name}: generated from sdcompile/catalogs/{catalog}.toml by "
            "`python -m sdcompile.phases.explain.catalog_tables`; do not edit -->")


def _end(name: str) -> str:
    return f"<!-- end of {name} -->"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def backends_table() -> str:
    lines = [_begin("backend table", "backends"), "",
             "| backend | from | entry point | AOT functionalization | MindIE-SD patterns | capture | copy kernels | "
             "runs without an NPU |",
             "|---|---|---|---|---|---|---|---|"]
    for b in load("backends")["backend"]:
        emulated = "yes, under the emulated NPU" if b.get("emulated") else "no"
        provider = "MindIE-SD" if b["provider"] == "mindiesd" else "torchair, outside MindIE-SD"
        lines.append(f"| `{b['name']}` ({_cell(b['title'])}) | {provider} | `{_cell(b['entry_point'])}` | "
                     f"{_cell(b['aot_functionalization'])} | {_cell(b['mindie_patterns'])} | {_cell(b['capture'])} | "
                     f"{_cell(b['copy_behaviour'])} | {emulated} |")
    return "\n".join([*lines, "", _end("backend table")])


def copy_options_table() -> str:
    data = load("copy_options")
    lines = [_begin("copy options", "copy_options"), ""]
    for o in data["option"]:
        needs = ", ".join(f"`{f}`" for f in o["requires"]) or "nothing"
        lines += [f"### Remedy {o['id']}: {o['title']}", "",
                  f"*When:* {o['when']}. *Offered when `CompilationConfig` declares:* {needs}.", "", o["mechanism"], ""]
        if o.get("setting"):
            lines += ["```python", "from mindiesd.compilation import CompilationConfig"]
            lines += [f"CompilationConfig.{st['field']} = {st['value']}  # {st['effect']}" for st in o["setting"]]
            lines += ["```", ""]
        if o.get("caveat"):
            lines += [f"*Caveat:* {o['caveat']}", ""]
    doc = data["documented"]
    lines += [f"Without a tree, the fields of {doc['release']}'s {doc['source']} stand in: "
              + ", ".join(f"`{f}`" for f in doc["fields"]) + ".", ""]
    return "\n".join([*lines, _end("copy options")])


def npu_emulation_tables() -> str:
    """The torch_npu behaviours the emulation reproduces, and the stand-ins for the target's NPU-only files."""

    lines = [f"<!-- npu emulation tables: generated from sdcompile/catalogs/{CATALOG}.toml and mindiesd_standins.toml "
             "by `python -m sdcompile.phases.explain.catalog_tables`; do not edit -->", "",
             "| behaviour | torch_npu | when it holds | otherwise | emulated as | seen |", "|---|---|---|---|---|---|"]
    for b in load(CATALOG)["behaviour"]:
        lines.append(f"| `{b['key']}` | `{_cell(b['torch_npu'])}` | {_cell(b['applies'])} | {_cell(b['otherwise'])} | "
                     f"`aten::{b['dispatch']['op']}` → `{b['dispatch']['to']}` | {_cell(b['seen'])} |")
    lines += ["", "| stand-in | for the tree's file | why that file cannot run here | what the stand-in serves |",
              "|---|---|---|---|"]
    for e in load("mindiesd_standins")["standin"]:
        exports = ", ".join(f"`{name}`" for name in sorted(e.get("exports", {})))
        serves = _cell(e["serves"]) + (f" (exports {exports})" if exports else "")
        lines.append(f"| `{e['module']}` | `{e['file']}` | {_cell(e['why'])} | {serves} |")
    return "\n".join([*lines, "", _end("npu emulation tables")])


SECTIONS = {  # guide file name -> (marker name, renderer)
    "backends.md": ("backend table", backends_table),
    "copy-elimination.md": ("copy options", copy_options_table),
    "pattern-templates.md": ("fused-op reference", fused_op_reference),
    "npu-emulation.md": ("npu emulation tables", npu_emulation_tables),
}


def marked_section(text: str, name: str) -> str | None:
    """The generated section of a guide, markers included (None when the markers are missing)."""
    start = text.find(f"<!-- {name}: generated")
    end_marker = _end(name)
    end = text.find(end_marker)
    if start < 0 or end < 0:
        return None
    return text[start:end + len(end_marker)]


def rewrite(docs: Path) -> list[Path]:
    """Replace each guide's generated section with the current one; returns the files changed."""

    changed = []
    for filename, (name, render) in SECTIONS.items():
        path = docs / filename
        text = path.read_text(encoding="utf-8")
        old = marked_section(text, name)
        if old is None:
            raise SystemExit(f"{path}: no `{name}` markers")
        new = render()
        if old != new:
            atomic_write_text(path, text.replace(old, new))
            changed.append(path)
    return changed


if __name__ == "__main__":  # pragma: no cover - the documented generator, run in a checkout
    for path in rewrite(Path(__file__).resolve().parents[3] / "docs"):
        print(f"rewrote {path}")
