"""Which torch releases sdcompile accepts: the target tree's plugin variants (`mindiesd/_torch_variants.py`, read
with `ast`, never imported), else MindIE-SD 3.1.0's list kept in catalogs/torch_variants.toml. The releases
sdcompile's own suite runs on and pyproject's declared range are said beside it; a torch the tree has a variant for
but sdcompile was not tested on is accepted (a note), one without a variant is refused."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

from sdcompile.catalogs import load

VARIANTS_FILE = "mindiesd/_torch_variants.py"
VARIANTS_NAME = "SUPPORTED_TORCH_PLUGIN_VARIANTS"
# (lowest, highest) minor releases, inclusive, that pyproject's `torch>=2.7,<2.14` declares (pip's install check)
SUPPORTED_TORCH: tuple[tuple[int, int], tuple[int, int]] = ((2, 7), (2, 13))


@dataclass(frozen=True)
class TorchVariants:
    releases: tuple[str, ...]  # "2.7", "2.9", ...: the torch releases MindIE-SD has a plugin variant for
    source: str  # the tree's file, or the catalog's citation of the release it copies
    from_tree: bool
    problem: str = ""  # why a known tree's file was not used ("" when it was, or no tree was known)


def _fallback(problem: str = "") -> TorchVariants:
    data = load("torch_variants")["fallback"]
    return TorchVariants(tuple(data["releases"]), f"{data['release']}'s {data['source']} "
                         "(sdcompile/catalogs/torch_variants.toml)", False, problem)


def read_torch_variants(root: Path | str | None) -> TorchVariants:
    """The plugin variants of the tree whose `mindiesd/` is under `root`; the catalog's when `root` is None or its
    file is missing or not a literal dict."""
    if root is None:
        return _fallback()
    path = Path(root) / VARIANTS_FILE
    if not path.is_file():
        return _fallback(f"{path} does not exist")
    try:
        module = ast.parse(path.read_text(encoding="utf-8", errors="replace"), filename=str(path))
    except SyntaxError as exc:
        return _fallback(f"{path}:{exc.lineno}: does not parse ({exc.msg})")
    for node in ast.walk(module):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) \
            else []
        if any(isinstance(t, ast.Name) and t.id == VARIANTS_NAME for t in targets):
            keys = node.value.keys if isinstance(node.value, ast.Dict) else []
            releases = tuple(k.value for k in keys if isinstance(k, ast.Constant) and isinstance(k.value, str))
            if releases and all(_release(r) for r in releases):
                return TorchVariants(releases, str(path), True)
            break
    return _fallback(f"{path} has no literal `{VARIANTS_NAME} = {{\"2.x\": ...}}`")


def _release(version: str) -> tuple[int, int] | None:
    found = re.match(r"(\d+)\.(\d+)", version)
    return (int(found.group(1)), int(found.group(2))) if found else None


def _span_text(releases: tuple[str, ...]) -> str:
    """"2.7, 2.9 to 2.13": consecutive minors joined into spans."""
    parsed = sorted(r for r in map(_release, releases) if r)
    spans: list[list[tuple[int, int]]] = []
    for r in parsed:
        if spans and spans[-1][-1][0] == r[0] and spans[-1][-1][1] + 1 == r[1]:
            spans[-1].append(r)
        else:
            spans.append([r])
    return ", ".join(f"{s[0][0]}.{s[0][1]}" + (f" to {s[-1][0]}.{s[-1][1]}" if len(s) > 1 else "") for s in spans)


@dataclass(frozen=True)
class TorchSupport:
    version: str | None  # "2.9.0+cu128"; None when torch is not installed
    supported: bool  # the tree (or the fallback list) has a plugin variant for its release
    variants: TorchVariants = field(default_factory=_fallback)
    tested: tuple[str, ...] = ()  # the releases sdcompile's suite runs on
    declared: str = ""  # pyproject's range, "torch>=2.7,<2.14"

    @property
    def release(self) -> str | None:
        found = _release(self.version) if self.version else None
        return f"{found[0]}.{found[1]}" if found else None

    @property
    def range_text(self) -> str:
        return _span_text(self.variants.releases)

    @property
    def tested_text(self) -> str:
        return " and ".join(self.tested)

    @property
    def untested(self) -> bool:
        """Accepted, but not a release sdcompile's own suite runs on."""
        return self.supported and self.release not in self.tested

    @property
    def install_spec(self) -> str:
        """What to install: the newest release the tree has a variant for and sdcompile is tested on (else the
        newest with a variant), as a pip requirement."""
        ordered = sorted(self.variants.releases, key=lambda r: _release(r) or (0, 0))
        both = [r for r in ordered if r in self.tested]
        pick = (both or ordered)[-1]
        return f"torch=={pick}.*"

    @property
    def in_declared(self) -> bool:
        found = _release(self.version) if self.version else None
        low, high = SUPPORTED_TORCH
        return found is not None and low <= found <= high


def torch_support(version: str | None = None, root: Path | str | None = None) -> TorchSupport:
    """Read from torch's dist-info and the tree's variants file, so the check costs no `import torch`."""
    variants = read_torch_variants(root)
    own = load("torch_variants")["sdcompile"]
    if version is None:
        from importlib import metadata  # only here: the help reads the list with a version given, at start-up

        try:
            version = metadata.version("torch")
        except metadata.PackageNotFoundError:
            return TorchSupport(None, False, variants, tuple(own["tested"]), own["declared"])
    found = _release(version)
    supported = found is not None and f"{found[0]}.{found[1]}" in variants.releases
    return TorchSupport(version, supported, variants, tuple(own["tested"]), own["declared"])
