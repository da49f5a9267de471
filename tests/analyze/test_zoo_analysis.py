"""Every zoo model analyzed end to end (build, recorded forward, compile like MindieSDBackend, freeze): each
primitive present is listed with its implementation, sites, source and parameter source, and every site maps
to ATen nodes (or says why it has none)."""

from __future__ import annotations

import pytest

from sdcompile.core.zoo.models import zoo_entries
from sdcompile.phases.analyze.phase import analyze

pytestmark = pytest.mark.slow

# Which primitives each tiny config contains in diffusers 0.42.1: R RMSNorm, P RoPE,
# A AdaLN, G GELU.
PRESENT = {
    "flux": "RPAG", "sd3": "R_AG", "wan": "RPAG", "hunyuanvideo": "RPAG", "qwenimage": "RPAG",
    "cogvideox": "_PAG", "ltx": "RPAG", "pixart": "__AG", "sana": "R_AG", "flux2": "RPA_", "chroma": "RPAG",
    "hidream": "RPA_", "lumina2": "RPA_", "cosmos": "RPAG", "skyreels_v2": "RPAG", "minimax_h3": "RPA_",
    "zimage": "RPA_", "ltx2": "RPAG", "hunyuanvideo15": "RPAG", "mochi": "RPA_",
}
ORDER = ("rmsnorm", "rope", "adaln", "gelu")


def test_expectations_cover_the_whole_zoo():
    assert set(PRESENT) == set(zoo_entries())


# flux is analyzed (with these checks and more) by test_analyze_phase.py; its compile is not repeated here
@pytest.mark.parametrize("name", [n for n in zoo_entries() if n != "flux"])
def test_zoo_model_analysis(name, tmp_path):
    result = analyze(model=name, op="all", workdir=tmp_path)
    assert result.gate == "pass"
    present = "".join(code if r.present else "_" for code, r in zip("RPAG", result.ops, strict=True))
    assert present == PRESENT[name]
    for report in result.ops:
        for impl in report.implementations:
            assert impl.sites and impl.source and impl.snippet, impl.name
            assert impl.decision.parameter_source in ("module attribute", "function input")
            assert impl.decision.path in ("replacement", "graph-entry")
            if impl.decision.parameter_source == "module attribute":
                assert impl.tensors and impl.evidence, impl.name
            for site in impl.sites:
                assert site.aten_nodes > 0 or site.note is not None, (impl.name, site.path)
