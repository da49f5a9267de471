"""`register` on the real MindIE-SD 3.1.0 tree (under git): three edits, idempotent, partial, undo, refusals."""

import json
import os

import pytest
from register_helpers import CONFIG, FLUX_RMSNORM_PATTERN, PASSES_INIT, PATTERNS_INIT, git, snapshot, write_pattern

from sdcompile.core.target.discovery import find_target
from sdcompile.core.target.registry import read_target_registry
from sdcompile.core.target.registry_audit import audit_registration
from sdcompile.phases.register.phase import register
from sdcompile.util.errors import BadInput


def numstat(root):
    """{file: (added, deleted)} of the working tree against the committed 3.1.0 files."""
    rows = [line.split("\t") for line in git(root, "diff", "--numstat").splitlines()]
    return {path: (int(a), int(d)) for a, d, path in rows}


def flux(target, tmp_path, **kwargs):
    return register(target, "flux", "rmsnorm", workdir=tmp_path / "ws", **kwargs)


def test_register_then_again_leaves_exactly_the_three_edits(target, tmp_path):
    first = flux(target, tmp_path)
    assert first.outcome == "registered" and first.written
    assert (first.position, first.registry_size) == (17, 17)
    assert all(not p.before and p.after for p in first.pieces)
    assert numstat(target) == {str(PATTERNS_INIT): (2, 0), str(PASSES_INIT): (1, 0), str(CONFIG): (1, 0)}
    diff = git(target, "diff", "-U0")
    added = sorted(line for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++"))
    assert added == [
        '+            "enable_flux_rmsnorm": ("FluxRmsNormPatternGroup", "..patterns"),',
        "+    'FluxRmsNormPatternGroup',",
        "+    enable_flux_rmsnorm: bool = True",
        "+from .flux_rmsnorm_pattern import FluxRmsNormPatternGroup",
    ]
    ours = "".join(f.diff for f in first.files)  # what --dry-run shows
    assert sorted(line for line in ours.splitlines() if line.startswith("+") and not line.startswith("+++")) == added

    second = flux(target, tmp_path)
    assert second.outcome == "already registered" and not second.written
    assert all(not f.changed and f.diff == "" for f in second.files)
    assert git(target, "diff", "-U0") == diff

    reg = read_target_registry(find_target(target))
    assert reg.groups[-1].flag == "enable_flux_rmsnorm" and reg.groups[-1].exported
    assert reg.groups[-1].pattern_file == "mindiesd/compilation/patterns/flux_rmsnorm_pattern.py"
    assert audit_registration(find_target(target)).passed


def test_undo_restores_the_files_byte_for_byte(target, tmp_path):
    original = snapshot(target)
    flux(target, tmp_path, before="enable_wan_residual_gate")  # lands between commented entries
    assert snapshot(target) != original
    undone = flux(target, tmp_path, undo=True)
    assert undone.outcome == "removed" and all(p.before and not p.after for p in undone.pieces)
    assert snapshot(target) == original
    assert git(target, "status", "--porcelain", "--untracked-files=no") == ""
    again = flux(target, tmp_path, undo=True)
    assert again.outcome == "not registered" and not again.written


def test_dry_run_shows_the_diffs_and_writes_nothing(target, tmp_path):
    original = snapshot(target)
    result = flux(target, tmp_path, dry_run=True)
    assert result.outcome == "registered" and result.dry_run and not result.written
    assert [f.changed for f in result.files] == [True, True, True]
    assert result.files[0].diff.startswith(f"--- a/{PATTERNS_INIT}\n+++ b/{PATTERNS_INIT}\n@@")
    assert snapshot(target) == original
    assert not (tmp_path / "ws").exists()  # nothing recorded either


def test_records_phase_three_with_its_evidence(target, tmp_path):
    flux(target, tmp_path)
    state = json.loads((tmp_path / "ws/flux/rmsnorm/state.json").read_text())
    record = state["phases"]["register"]
    assert (record["number"], record["verdict"], record["device"]) == (3, "pass", "n/a")
    assert record["evidence"] == ["flux/rmsnorm/register.json", "flux/rmsnorm/register.diff"]
    assert "enable_flux_rmsnorm" in (tmp_path / "ws/flux/rmsnorm/register.diff").read_text()
    assert json.loads((tmp_path / "ws/flux/rmsnorm/register.json").read_text())["outcome"] == "registered"

    flux(target, tmp_path, undo=True)
    record = json.loads((tmp_path / "ws/flux/rmsnorm/state.json").read_text())["phases"]["register"]
    assert record["verdict"] == "fail" and "--undo" in record["summary"]  # phase 3 is to be done again
    assert not (tmp_path / "ws/flux/rmsnorm/register.diff").exists()


# --- partial registrations, done by hand ----------------------------------------------------------------------

def _hand_flag(root):
    path = root / CONFIG
    last = "    enable_qwen_rope: bool = True\n"
    path.write_text(path.read_text().replace(last, last + "    enable_flux_rmsnorm: bool = True\n"))


def _hand_registry(root):
    path = root / PASSES_INIT
    entry = '            "enable_flux_rmsnorm": ("FluxRmsNormPatternGroup", "..patterns"),\n'
    path.write_text(path.read_text().replace("        }\n", entry + "        }\n", 1))


def _hand_exports(root):
    path = root / PATTERNS_INIT
    last = "'WanRmsNormPatternGroup',\n"
    text = path.read_text().replace(last + "]", last + "    'FluxRmsNormPatternGroup',\n]")
    path.write_text(text + "from .flux_rmsnorm_pattern import FluxRmsNormPatternGroup\n")


@pytest.mark.parametrize(
    "by_hand",
    [(_hand_flag,), (_hand_registry,), (_hand_exports,), (_hand_flag, _hand_registry), (_hand_registry, _hand_exports)],
    ids=["flag", "registry", "exports", "flag+registry", "registry+exports"],
)
def test_partial_registration_is_detected_and_completed(target, tmp_path, by_hand):
    for edit in by_hand:
        edit(target)
    hand_made = snapshot(target)
    result = flux(target, tmp_path)
    assert result.outcome == "completed"
    before = {p.piece: p.before for p in result.pieces}
    assert before["FusionPatterns flag"] == (_hand_flag in by_hand)
    assert before["registry entry"] == (_hand_registry in by_hand)
    assert before["__all__ entry"] == before["import"] == (_hand_exports in by_hand)
    assert all(p.after for p in result.pieces)
    # the hand-made files were left alone, the others edited
    edited = {f.file for f in result.files if f.changed}
    untouched = {str(rel) for rel, data in hand_made.items() if snapshot(target)[rel] == data}
    assert edited.isdisjoint(untouched) and len(edited) == 3 - len(by_hand)
    audit = audit_registration(find_target(target))
    assert audit.passed and audit.entries == audit.flags == audit.exports == 17

    assert flux(target, tmp_path).outcome == "already registered"
    flux(target, tmp_path, undo=True)
    assert audit_registration(find_target(target)).passed
    assert git(target, "status", "--porcelain", "--untracked-files=no") == ""  # hand edits removed too


# --- order -----------------------------------------------------------------------------------------------------

def test_before_and_after_place_the_entry(target, tmp_path):
    write_pattern(target, "flux_rope_pattern", FLUX_RMSNORM_PATTERN.replace("FluxRmsNorm", "FluxRope"))
    result = register(target, "flux", "rope", before="enable_wan_residual_gate", workdir=tmp_path)
    assert result.position == 11 and result.ordering == ()
    flags = [e.flag for e in read_target_registry(find_target(target)).entries]
    assert flags[9:12] == ["enable_qwen_rope", "enable_flux_rope", "enable_wan_residual_gate"]

    by_group = flux(target, tmp_path, after="RopePatternGroup")  # a key may be a group name too
    assert by_group.position == 3
    assert [e.flag for e in read_target_registry(find_target(target)).entries][1:3] == ["enable_rope",
                                                                                        "enable_flux_rmsnorm"]


def test_appending_a_rope_group_after_the_residual_gate_warns(target, tmp_path):
    write_pattern(target, "flux_rope_pattern", FLUX_RMSNORM_PATTERN.replace("FluxRmsNorm", "FluxRope"))
    result = register(target, "flux", "rope", workdir=tmp_path)
    assert result.position == 17 and result.written  # a warning, not a refusal
    assert [(v.rule, v.must_come_first, v.registered_after) for v in result.ordering] == [
        ("rope-before-residual-gate", "enable_flux_rope", "enable_wan_residual_gate")
    ]
    assert result.ordering[0].after_position == 11
    again = register(target, "flux", "rope", workdir=tmp_path)
    assert again.outcome == "already registered" and len(again.ordering) == 1  # still said on every run


def test_an_existing_entry_is_not_moved_by_before(target, tmp_path):
    flux(target, tmp_path)
    result = flux(target, tmp_path, before="enable_rope")
    assert result.outcome == "already registered" and result.position == 17
    assert any("not moved" in note for note in result.notes)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"before": "enable_nope"}, "no pattern_registry entry 'enable_nope'"),
        ({"before": "enable_rope", "after": "enable_rms_norm"}, "cannot be combined"),
        ({"undo": True, "after": "enable_rope"}, "do not apply to --undo"),
    ],
)
def test_bad_order_options(target, tmp_path, kwargs, match):
    with pytest.raises(BadInput, match=match):
        flux(target, tmp_path, **kwargs)


# --- refusals: exit 2, every file unchanged ----------------------------------------------------------------------

def test_a_read_only_file_refuses_and_changes_nothing(target, tmp_path):
    original = snapshot(target)
    os.chmod(target / PASSES_INIT, 0o444)
    with pytest.raises(BadInput, match="read-only; every file is unchanged"):
        flux(target, tmp_path)
    assert snapshot(target) == original
    # nothing recorded: the pair's folder holds only the lock the refused command held
    assert [p.name for p in (tmp_path / "ws").rglob("*") if p.is_file()] == ["pair.lock"]


def test_a_read_only_tree_folder_is_kept_to_even_as_root(target, tmp_path):
    # root could create the lock's folder in it; the permission bits say the tree is not to be changed
    original, top = snapshot(target), sorted(p.name for p in target.iterdir())
    os.chmod(target, 0o555)
    try:
        with pytest.raises(BadInput, match=r"the folder .* is not writable \(mode 0555"):
            flux(target, tmp_path)
        assert sorted(p.name for p in target.iterdir()) == top and ".sdcompile-tree" not in top
    finally:
        os.chmod(target, 0o755)
    assert snapshot(target) == original


def test_a_registry_that_is_not_a_dict_literal_refuses_and_changes_nothing(target, tmp_path):
    passes = target / PASSES_INIT
    text = passes.read_text()
    start = text.index("pattern_registry = {")
    passes.write_text(text[:start] + "pattern_registry = dict(load_registry())\n" + text[text.index("}\n", start) + 2:])
    original = snapshot(target)
    with pytest.raises(BadInput, match="not a dict literal"):
        flux(target, tmp_path)
    assert snapshot(target) == original


def test_an_unexpected_layout_refuses_and_changes_nothing(target, tmp_path):
    config = target / CONFIG
    config.write_text(config.read_text().replace("class FusionPatterns:", "class Fusion:"))
    original = snapshot(target)
    with pytest.raises(BadInput, match="FusionPatterns"):
        flux(target, tmp_path)
    assert snapshot(target) == original


def test_a_missing_pattern_file_is_refused_unless_allowed(target, tmp_path):
    (target / "mindiesd/compilation/patterns/flux_rmsnorm_pattern.py").unlink()
    original = snapshot(target)
    with pytest.raises(BadInput, match="flux_rmsnorm_pattern.py does not exist") as info:
        flux(target, tmp_path)
    assert "sdcompile scaffold --model flux --op rmsnorm" in info.value.fix and "--allow-missing" in info.value.fix
    assert snapshot(target) == original
    allowed = flux(target, tmp_path, allow_missing=True)
    assert allowed.outcome == "registered" and allowed.pattern_file_status == "missing (--allow-missing)"
    assert any("importing the patterns package fails" in n for n in allowed.notes)
    findings = audit_registration(find_target(target)).findings
    assert [(f.kind, f.subject) for f in findings if f.severity == "error"] == [
        ("not-importable", "FluxRmsNormPatternGroup")
    ]


def test_a_pattern_file_without_the_group_is_refused(target, tmp_path):
    write_pattern(target, "flux_rmsnorm_pattern", "FluxPatterns = []\n")
    with pytest.raises(BadInput, match="does not define FluxRmsNormPatternGroup"):
        flux(target, tmp_path)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"flag": "enable_rope"}, "`enable_rope` is already registered for RopePatternGroup"),
        ({"group": "RopePatternGroup", "module": "rope_pattern"}, "already registered under `enable_rope`"),
    ],
)
def test_names_taken_by_another_registration_are_refused(target, tmp_path, kwargs, match):
    original = snapshot(target)
    with pytest.raises(BadInput, match=match):
        flux(target, tmp_path, **kwargs)
    with pytest.raises(BadInput, match=match):
        flux(target, tmp_path, undo=True, **kwargs)  # undo never removes someone else's entry
    assert snapshot(target) == original


def test_an_existing_hand_written_file_registers_under_explicit_names(target, tmp_path):
    write_pattern(target, "flux_qk_norm_pattern", FLUX_RMSNORM_PATTERN.replace("FluxRmsNorm", "FluxQkNorm"))
    result = register(target, "flux", "qk_norm", group="FluxQkNormPatternGroup", flag="enable_flux_qk_norm",
                      module="flux_qk_norm_pattern.py", workdir=tmp_path)
    assert result.outcome == "registered" and result.pattern_file_status == "defines FluxQkNormPatternGroup"
    assert audit_registration(find_target(target)).passed
