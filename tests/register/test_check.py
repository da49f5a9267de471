"""`register --check` (the registration audit) on the real 3.1.0 tree and on copies broken one way each."""

import pytest
from register_helpers import CONFIG, PASSES_INIT, PATTERNS_INIT

from sdcompile.phases.register.phase import check_registration

PATTERNS = "mindiesd/compilation/patterns"


def test_the_real_tree_passes(mindiesd_tree):
    audit = check_registration(mindiesd_tree)
    assert audit.passed and audit.errors == 0
    assert (audit.entries, audit.flags, audit.exports) == (16, 16, 16)
    assert audit.target_version == "3.1.0"
    # Upstream's registry breaks two of the ordering rules its own comments record: both groups come after
    # enable_wan_residual_gate (#11). Reported as warnings, which do not fail the check.
    assert [(f.kind, f.subject) for f in audit.findings] == [
        ("ordering", "enable_minimax_h3_adaln"),
        ("ordering", "enable_minimax_h3_gate"),
    ]
    assert {(v.rule, v.registered_after, v.after_position) for v in audit.ordering} == {
        ("adaln-before-residual-gate", "enable_wan_residual_gate", 11),
        ("indexed-gate-before-residual-gate", "enable_wan_residual_gate", 11),
    }


def _replace(path, old, new, count=1):
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, count))


def _duplicate_line(path, line):
    _replace(path, line, line + line)


BREAKAGES = {
    "flag removed": (
        lambda t: _replace(t / CONFIG, "    enable_fast_gelu: bool = True\n", ""),
        ("entry-without-flag", "enable_fast_gelu"),
    ),
    "registry entry removed": (
        lambda t: _replace(t / PASSES_INIT, '"enable_mul_add": ("MulAddPatternGroup", "..patterns"),\n', ""),
        ("flag-without-entry", "enable_mul_add"),
    ),
    "not in __all__": (
        lambda t: _replace(t / PATTERNS_INIT, "    'GELUPatternGroup',\n", ""),
        ("not-exported", "GELUPatternGroup"),
    ),
    "import removed": (
        lambda t: _replace(t / PATTERNS_INIT, "from .gelu_pattern import GELUPatternGroup\n", ""),
        ("not-importable", "GELUPatternGroup"),
    ),
    "pattern file deleted": (
        lambda t: (t / PATTERNS / "gelu_pattern.py").unlink(),
        ("not-importable", "GELUPatternGroup"),
    ),
    "group renamed in its file": (
        lambda t: _replace(t / PATTERNS / "gelu_pattern.py", "GELUPatternGroup = ", "GeluPatternGroup = "),
        ("not-importable", "GELUPatternGroup"),
    ),
    "registry module that does not resolve": (
        lambda t: _replace(t / PASSES_INIT, '("GELUPatternGroup", "..patterns")', '("GELUPatternGroup", "..nowhere")'),
        ("not-importable", "GELUPatternGroup"),
    ),
    "duplicate registry key": (
        lambda t: _duplicate_line(t / PASSES_INIT, '            "enable_rope": ("RopePatternGroup", "..patterns"),\n'),
        ("duplicate-entry", "enable_rope"),
    ),
    "group under two flags": (
        lambda t: _replace(t / PASSES_INIT, '("MulAddPatternGroup", "..', '("GELUPatternGroup", "..'),
        ("duplicate-group", "GELUPatternGroup"),
    ),
    "duplicate flag": (
        lambda t: _duplicate_line(t / CONFIG, "    enable_rope: bool = True\n"),
        ("duplicate-flag", "enable_rope"),
    ),
    "duplicate export": (
        lambda t: _duplicate_line(t / PATTERNS_INIT, "    'RopePatternGroup',\n"),
        ("duplicate-export", "RopePatternGroup"),
    ),
    "duplicate import": (
        lambda t: _duplicate_line(t / PATTERNS_INIT, "from .rope_pattern import RopePatternGroup\n"),
        ("duplicate-import", "RopePatternGroup"),
    ),
    "an unregistered export from a module file that does not exist": (  # what a register killed after its
        # first rename left with --allow-missing; only importing the package failed before
        lambda t: _replace(t / PATTERNS_INIT, "from .gelu_pattern import GELUPatternGroup\n",
                           "from .gelu_pattern import GELUPatternGroup\nfrom .flux_rmsnorm_pattern import Flux\n"),
        ("missing-module", "Flux"),
    ),
    "__all__ names something never imported": (
        lambda t: _replace(t / PATTERNS_INIT, "__all__ = [\n", "__all__ = [\n    'GhostPatternGroup',\n"),
        ("export-unbound", "GhostPatternGroup"),
    ),
}


@pytest.mark.parametrize("breakage", BREAKAGES)
def test_a_broken_copy_fails_naming_the_problem(mindiesd_tree, breakage):
    breaking, expected = BREAKAGES[breakage]
    breaking(mindiesd_tree)
    audit = check_registration(mindiesd_tree)
    assert not audit.passed
    errors = [(f.kind, f.subject) for f in audit.findings if f.severity == "error"]
    assert expected in errors, errors
    assert all(f.where.startswith("mindiesd/compilation/") for f in audit.findings)


def test_a_flag_without_a_bool_default_is_a_warning(mindiesd_tree):
    _replace(mindiesd_tree / CONFIG, "enable_rope: bool = True", "enable_rope: bool = DEFAULT")
    audit = check_registration(mindiesd_tree)
    assert audit.passed
    assert ("warning", "flag-default", "enable_rope") in [(f.severity, f.kind, f.subject) for f in audit.findings]


# --- --import: the modules really imported under the NPU (emulated here) -------------------------------------

@pytest.mark.slow
def test_import_check_loads_every_registered_group(target, tmp_path):
    from sdcompile.core.npu.device import current
    from sdcompile.phases.register.phase import register

    register(target, "flux", "rmsnorm", workdir=tmp_path)
    audit = check_registration(target, import_modules=True)
    assert audit.passed, [f for f in audit.findings if f.severity == "error"]
    assert audit.device == current().label and audit.import_check.startswith(f"imported under {current().label}")
    assert not [f for f in audit.findings if f.kind in ("import-failed", "empty-group")]


@pytest.mark.slow
def test_import_check_catches_what_the_static_check_cannot(target, tmp_path):
    from register_helpers import FLUX_RMSNORM_PATTERN, write_pattern

    from sdcompile.phases.register.phase import register

    # parses and defines the group, so register and the static audit accept it; importing it fails
    write_pattern(target, "flux_rmsnorm_pattern", "from .no_such_helper import scale\n" + FLUX_RMSNORM_PATTERN)
    write_pattern(target, "flux_rope_pattern", "FluxRopePatternGroup = []\n")  # imports, holds nothing
    register(target, "flux", "rmsnorm", workdir=tmp_path)
    register(target, "flux", "rope", before="enable_wan_residual_gate", workdir=tmp_path)
    assert check_registration(target).passed

    audit = check_registration(target, import_modules=True)
    assert not audit.passed
    found = {(f.severity, f.kind, f.subject) for f in audit.findings}
    assert ("error", "import-failed", "mindiesd.compilation.patterns") in found  # the package __init__ breaks
    assert ("error", "import-failed", "FluxRmsNormPatternGroup") in found
    assert ("warning", "empty-group", "FluxRopePatternGroup") in found
    # the other sixteen groups still import: one broken module does not hide them
    assert not any(f.kind == "import-failed" and f.subject.endswith("PatternGroup") and "Flux" not in f.subject
                   for f in audit.findings)
