"""Which phase a later `sdcompile run` starts from, on a real workspace and a target folder: the rule of
sdcompile/lifecycle/state.py, one change at a time."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from sdcompile.core.target.discovery import TargetTree
from sdcompile.lifecycle.context import RunContext
from sdcompile.lifecycle.options import RunOptions
from sdcompile.lifecycle.pipeline import _first_to_run
from sdcompile.lifecycle.state import KeptPhase, RunMemory, phase_fingerprint, tree_hash
from sdcompile.phases.scaffold.facts import ScaffoldFacts
from sdcompile.phases.scaffold.results import GeneratedFile, ScaffoldResult, Variant, Why
from sdcompile.util.reasons import Reason
from sdcompile.util.serialize import from_jsonable, to_jsonable
from sdcompile.workspace.artifacts import write_artifact
from sdcompile.workspace.phases import PHASES
from sdcompile.workspace.store import Workspace

# a whole scaffold result as sdcompile writes it (Flux's RMSNorm: every site covered by WanRmsNormPatternGroup)
FLUX_SCAFFOLD = from_jsonable(ScaffoldResult, json.loads(
    (Path(__file__).parents[1] / "rendering/data/flux.scaffold.json").read_text(encoding="utf-8")))


def _scaffold(decision: str, sites=None, files=(), variants=(), **names) -> ScaffoldResult:
    """Flux's scaffold result with another decision, site rows, generated files (path, kind) and variant paths."""
    return dataclasses.replace(
        FLUX_SCAFFOLD, decision=decision, sites=FLUX_SCAFFOLD.sites if sites is None else tuple(sites),
        files=tuple(GeneratedFile(path, kind, "created", 1, "") for path, kind in files),
        variants=tuple(Variant(path, "Chain", "create", "impl", "src", (), (), (), (), (), "") for path in variants),
        names=dataclasses.replace(FLUX_SCAFFOLD.names, **names))


INPUTS = RunOptions(model="flux", model_file=None, op="rmsnorm", dtype="bf16", plain_cpu=False, name=None,
                    path="auto", target="", min_cosine=0.9921875, max_inflation=2.0)


@pytest.fixture
def completed(tmp_path):
    """A workspace where a run completed all seven phases: (context, memory, inputs)."""
    tree = TargetTree(root=tmp_path / "tree", version="3.1.0", found_by="test")
    (tree.compilation / "patterns").mkdir(parents=True)
    (tree.compilation / "patterns" / "wan_rmsnorm_pattern.py").write_text("WanRmsNormPatternGroup = []\n")
    inputs = dataclasses.replace(INPUTS, target=str(tree.root))
    ws = Workspace(tmp_path / "ws")
    run_dir = ws.pair_dir("flux", "rmsnorm") / "run"
    ctx = RunContext(inputs, "flux", tree, ws, None, run_dir, None, lambda _text: None)
    memory = RunMemory(run_dir)
    for phase in PHASES:
        record = ws.record("flux", "rmsnorm", phase, "skipped" if phase == "register" else "pass", "done")
        memory.remember(phase, KeptPhase(phase_fingerprint(phase, inputs), record.when, tree_hash(tree.compilation)))
    scaffold = ws.pair_dir("flux", "rmsnorm") / "scaffold" / "scaffold.json"
    scaffold.parent.mkdir(parents=True)
    write_artifact("scaffold", scaffold, to_jsonable(_scaffold("reuse")))
    for side in ("eager", "compile"):
        (run_dir / "profiles" / side / f"flux-{side}-cpu_1_20260101000000000_ascend_pt").mkdir(parents=True)
    return ctx, RunMemory(run_dir), inputs


def _start(completed, **changes) -> str:
    ctx, memory, inputs = completed
    first = _first_to_run(ctx, memory, dataclasses.replace(inputs, **changes))
    return PHASES[first] if first < len(PHASES) else "nothing"


def test_the_same_inputs_keep_every_phase(completed):
    assert _start(completed) == "nothing"


@pytest.mark.parametrize(("changes", "start"), [
    ({"dtype": "fp32"}, "analyze"),
    ({"plain_cpu": True}, "analyze"),
    ({"name": "mine"}, "scaffold"),  # analyze does not depend on the names
    ({"path": "graph-pass"}, "scaffold"),
    ({"min_cosine": 0.999}, "verify"),
    ({"max_inflation": 1.5}, "copy-audit"),
])
def test_a_changed_input_reruns_the_first_phase_that_reads_it(completed, changes, start):
    assert _start(completed, **changes) == start


def test_edited_target_sources_rerun_the_phases_that_read_them(completed):
    ctx, _, _ = completed
    (ctx.tree.compilation / "patterns" / "wan_rmsnorm_pattern.py").write_text("WanRmsNormPatternGroup = [None]\n")
    assert _start(completed) == "verify"  # scaffold and register made edits themselves; verify read the tree


def test_a_phase_run_by_hand_since_or_failed_is_run_again(completed):
    ctx, memory, inputs = completed
    kept = memory.phases["debug"]
    memory.remember("debug", dataclasses.replace(kept, when="2000-01-01T00:00:00+00:00"))
    assert _start(completed) == "debug"
    ctx.ws.record("flux", "rmsnorm", "verify", "fail", "by hand")
    assert _start(completed) == "verify"


def test_missing_artifacts_rerun_the_phase_that_made_them(completed):
    ctx, _, _ = completed
    for side in ("eager", "compile"):
        for run in (ctx.run_dir / "profiles" / side).iterdir():
            run.rmdir()
    assert _start(completed) == "integrate"
    (ctx.pair_dir / "scaffold" / "scaffold.json").unlink()
    assert _start(completed) == "scaffold"


def test_profiles_cut_short_rerun_the_phase_that_makes_them(completed):
    from sdcompile.core.profiles.locate import STAGING_PREFIX

    ctx, _, _ = completed
    for side in ("eager", "compile"):
        for run in (ctx.run_dir / "profiles" / side).iterdir():
            run.rename(run.with_name(f"{STAGING_PREFIX}1-{run.name}"))  # built, never renamed into place
    assert _start(completed) == "integrate"


def test_an_unreadable_memory_keeps_nothing(completed):
    ctx, _, inputs = completed
    (ctx.run_dir / "run.json").write_text("{not json")
    assert _first_to_run(ctx, RunMemory(ctx.run_dir), inputs) == 0


def test_a_model_file_is_an_input_by_its_content(tmp_path):
    model = tmp_path / "my_model.py"
    model.write_text("def build(): ...\n")
    inputs = dataclasses.replace(INPUTS, model=None, model_file=f"{model}:build")
    before = phase_fingerprint("analyze", inputs)
    assert phase_fingerprint("analyze", inputs) == before
    model.write_text("def build(): return 1\n")
    assert phase_fingerprint("analyze", inputs) != before


def test_scaffold_facts_name_the_groups_later_phases_check():
    reuse = ScaffoldFacts.of(_scaffold("reuse", group="FluxRmsNormPatternGroup"))
    assert reuse.covering == ("WanRmsNormPatternGroup",) and not reuse.generated_pattern
    assert not reuse.rows_need_graph_pass
    # the typed field decides, not the reason's wording
    row = FLUX_SCAFFOLD.sites[0]
    refused = dataclasses.replace(row, need="cannot generate", reason=Reason.of(Why.CHAIN, message="no path here"),
                                  graph_pass_can_match=True)
    worded = dataclasses.replace(row, need="cannot generate",
                                 reason=Reason.of(Why.CHAIN, message="mentions --path graph-entry"),
                                 graph_pass_can_match=False)
    assert ScaffoldFacts.of(_scaffold("cannot generate", [refused])).rows_need_graph_pass
    assert not ScaffoldFacts.of(_scaffold("cannot generate", [worded])).rows_need_graph_pass
    generated = ScaffoldFacts.of(_scaffold(
        "generate", files=[("mindiesd/compilation/passes/qwenimage_rmsnorm_pass.py", "graph pass"),
                           ("tests/compilation/passes/test_qwenimage_rmsnorm_pass.py", "graph pass test")],
        variants=["graph-pass"], group="QwenImageRmsNormPatternGroup"))
    assert generated.generated_graph_pass and generated.graph_pass_class == "QwenImageRmsNormGraphPass"
    assert generated.file_of("graph pass test") == "tests/compilation/passes/test_qwenimage_rmsnorm_pass.py"
    assert not generated.registers  # a custom pass (asked for) is switched on by the backend edit, not registered
    entries = ScaffoldFacts.of(_scaffold(
        "generate", files=[("mindiesd/compilation/patterns/qwenimage_rmsnorm_pattern.py", "graph entries")],
        variants=["graph-entry"], group="QwenImageRmsNormPatternGroup", flag="enable_qwenimage_rmsnorm"))
    assert entries.generated_entries and entries.registers and not entries.generated_graph_pass


def test_default_paths_of_the_context(completed):
    ctx, _, _ = completed
    assert ctx.eager_profile == ctx.run_dir / "profiles" / "eager"
    assert Path(ctx.pair_dir).name == "rmsnorm"


def test_a_dead_end_with_reasons_that_differ_lists_each_site_and_its_reason():
    """run's stop reason names each refused site with its own reason when scaffold's decision only counts them
    ("the reasons differ by site"); where the decision gives the one reason they share, the sites are not repeated."""
    from sdcompile.lifecycle.steps import refused_sites

    first, second, third = FLUX_SCAFFOLD.sites[:3]
    rows = [dataclasses.replace(first, need="cannot generate", reason=Reason.of(Why.SPLIT_BY_BREAK, graphs=2)),
            dataclasses.replace(second, need="cannot generate", reason=Reason.of(Why.NOT_IN_GRAPH)),
            third]
    per_site = dataclasses.replace(_scaffold("cannot generate", rows),
                                   decision_reason=Reason.of(Why.NONE_WRITABLE, needy=2, why=None))
    text = refused_sites(per_site)
    assert f"{first.site}: split across 2 captured graphs" in text and f"{second.site}: the code ran, but" in text
    assert third.site not in text
    shared = dataclasses.replace(per_site, decision_reason=Reason.of(Why.NONE_WRITABLE, needy=2,
                                                                     why=Reason.of(Why.NOT_IN_GRAPH)))
    assert refused_sites(shared) == ""
    # some sites generated, these not: listed whatever the decision says
    partly = dataclasses.replace(_scaffold("generate", rows), decision_reason=Reason.of(
        Why.GENERATE, generated=1, forced=False, counts={}))
    assert text.startswith("; by site: ") and refused_sites(partly) == text.replace("; by site: ", "; cannot generate ")
    many = [dataclasses.replace(r, need="cannot generate", reason=Reason.of(Why.SPLIT_BY_BREAK, graphs=i + 2))
            for i, r in enumerate(FLUX_SCAFFOLD.sites)]
    assert len(many) > 4 and refused_sites(dataclasses.replace(per_site, sites=tuple(many))).endswith(
        f"; and {len(many) - 4} more (scaffold.json)")
