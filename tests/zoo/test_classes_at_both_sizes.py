"""Five diffusers transformers the zoo does not list, each analyzed and scaffolded (--dry-run) at tiny size and at
real size with one block of each kind: the same phases find the same primitive at both sizes, and at real size the
graphs carry the class's real widths."""

from __future__ import annotations

import pytest

from sdcompile.core.zoo.build_options import ModelBuild
from sdcompile.phases.analyze.phase import analyze
from sdcompile.phases.scaffold.phase import scaffold

# (class, an op its forward runs, a real-size width of that op's inputs as its subgraph shows it)
CLASSES = [
    ("CogView4Transformer2DModel", "rope", "num_attention_heads"),
    ("ConsisIDTransformer3DModel", "adaln", "num_attention_heads"),  # its RoPE tables come from the pipeline
    ("NucleusMoEImageTransformer2DModel", "rmsnorm", "num_attention_heads"),
    ("SanaVideoTransformer3DModel", "rmsnorm", "num_attention_heads"),
    ("LongCatImageTransformer2DModel", "rmsnorm", "num_attention_heads"),
]
SIZES = {"tiny": ModelBuild(), "real": ModelBuild(size="real", num_layers=1)}


@pytest.mark.slow
@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize(("class_name", "op", "heads_field"), CLASSES, ids=[c for c, _, _ in CLASSES])
def test_a_class_outside_the_zoo_is_analyzed_and_scaffolded_at_each_size(class_name, op, heads_field, size,
                                                                         mindiesd_tree, tmp_path):
    build = SIZES[size]
    analysis = analyze(model=class_name, op=op, workdir=tmp_path / "ws", build=build)
    (report,) = analysis.ops
    assert analysis.gate == "pass" and report.site_count >= 1, analysis.missing
    assert analysis.build == build.fingerprint() and analysis.label.endswith(
        "real config)" if size == "real" else "config)")
    heads = _heads(analysis.model_notes, heads_field)
    # tiny: two heads, or the class's own when it does not run with two ("one block config"); real: its own heads
    assert heads in (2, None) if size == "tiny" else heads is None, analysis.model_notes

    result = scaffold(model=class_name, op=op, repo=mindiesd_tree, workdir=tmp_path / "ws", dry_run=True,
                      build=build)
    assert result.phase1.startswith(f"{analysis.model}/{op}/analysis.json"), result.phase1  # analyze's, reused
    counted = [r for r in result.sites if r.need != "not a site"]
    assert counted and all(r.need in ("covered", "replacement", "graph-entry", "cannot generate", "fused by the model")
                           for r in counted), [(r.site, r.need) for r in counted]
    # every command scaffold prints next builds the same model again; register takes the pair's word (no model)
    builds = [s for s in result.next_steps if s.startswith("sdcompile ") and not s.startswith("sdcompile register")]
    assert all(f"--model {class_name}" in step for step in builds), result.next_steps
    assert all(f"--model {result.model} " in step for step in result.next_steps
               if step.startswith("sdcompile register")), result.next_steps
    if size == "real":
        assert all("--size real --num-layers 1" in step for step in result.next_steps
                   if step.startswith(("sdcompile verify", "sdcompile debug", "sdcompile scaffold")))


def _heads(notes: tuple[str, ...], field: str) -> int | None:
    """The head count the size's config change notes give (None: the size left it at the class's default)."""
    for note in notes:
        for change in note.split("; ", 1)[-1].split(", "):
            if change.startswith(f"{field} "):
                return int(change.rsplit("-> ", 1)[1])
    return None
