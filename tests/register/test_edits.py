"""The LibCST edits as before/after pairs: add gives `after`, adding again changes nothing, remove gives `before`
back byte for byte, removing again changes nothing."""

from functools import partial

import pytest
from register_helpers import CONFIG, PASSES_INIT, PATTERNS_INIT

from sdcompile.core.target.edits import UnexpectedLayout
from sdcompile.core.target.edits.fusion_flags import ensure_flag, flag_names, remove_flag
from sdcompile.core.target.edits.patterns_init import ensure_exported, exported_names, remove_export
from sdcompile.core.target.edits.registry_dict import ensure_registry_entry, registry_keys, remove_registry_entry
from sdcompile.core.target.naming import registration_names

FLUX = registration_names("flux", "rmsnorm")
WHERE = "file.py"


def assert_pair(ensure, remove, before: str, after: str) -> None:
    b, a = before.encode(), after.encode()
    assert ensure(b, FLUX, where=WHERE).decode() == after
    assert ensure(a, FLUX, where=WHERE) == a, "adding twice must be a no-change edit"
    assert remove(a, FLUX, where=WHERE) == b, "remove must undo add byte for byte"
    assert remove(b, FLUX, where=WHERE) == b, "removing what is absent must be a no-change edit"


# --- patterns/__init__.py -------------------------------------------------------------------------------------

EXPORT_PAIRS = {
    "upstream layout: appended to __all__, import sorted into the block": (
        "# header\n\n__all__ = [\n    'AdaPatternGroup',\n    'GeluPatternGroup',\n]\n\n"
        "from .ada_pattern import AdaPatternGroup\nfrom .gelu_pattern import GeluPatternGroup\n",
        "# header\n\n__all__ = [\n    'AdaPatternGroup',\n    'GeluPatternGroup',\n"
        "    'FluxRmsNormPatternGroup',\n]\n\n"
        "from .ada_pattern import AdaPatternGroup\nfrom .flux_rmsnorm_pattern import FluxRmsNormPatternGroup\n"
        "from .gelu_pattern import GeluPatternGroup\n",
    ),
    "import sorting first keeps the blank line above the block": (
        '__all__ = ["GeluPatternGroup"]\n\nfrom .gelu_pattern import GeluPatternGroup\n',
        '__all__ = ["GeluPatternGroup", "FluxRmsNormPatternGroup"]\n\n'
        "from .flux_rmsnorm_pattern import FluxRmsNormPatternGroup\nfrom .gelu_pattern import GeluPatternGroup\n",
    ),
    "empty __all__ and no imports yet": (
        "__all__ = []\n",
        "__all__ = ['FluxRmsNormPatternGroup']\n\nfrom .flux_rmsnorm_pattern import FluxRmsNormPatternGroup\n",
    ),
    "no trailing comma in a multi-line __all__": (
        "__all__ = [\n    'A',\n    'B'\n]\nfrom .a_pattern import A, B\n",
        "__all__ = [\n    'A',\n    'B',\n    'FluxRmsNormPatternGroup'\n]\nfrom .a_pattern import A, B\n"
        "from .flux_rmsnorm_pattern import FluxRmsNormPatternGroup\n",
    ),
}


@pytest.mark.parametrize("case", EXPORT_PAIRS)
def test_export_pairs(case):
    assert_pair(ensure_exported, remove_export, *EXPORT_PAIRS[case])


def test_export_completes_a_half_done_registration():
    only_all = "__all__ = ['FluxRmsNormPatternGroup']\n"
    assert ensure_exported(only_all.encode(), FLUX, WHERE).decode() == (
        only_all + "\nfrom .flux_rmsnorm_pattern import FluxRmsNormPatternGroup\n"
    )
    only_import = "__all__ = []\nfrom .flux_rmsnorm_pattern import FluxRmsNormPatternGroup\n"
    assert ensure_exported(only_import.encode(), FLUX, WHERE).decode() == only_import.replace(
        "[]", "['FluxRmsNormPatternGroup']"
    )


def test_remove_export_takes_only_its_name_from_a_shared_import():
    src = "__all__ = ['X', 'FluxRmsNormPatternGroup']\nfrom .flux_rmsnorm_pattern import X, FluxRmsNormPatternGroup\n"
    assert remove_export(src.encode(), FLUX, WHERE).decode() == "__all__ = ['X']\nfrom .flux_rmsnorm_pattern import X\n"


@pytest.mark.parametrize(
    ("source", "match"),
    [
        ("from .a import A\n", "expected one `__all__"),
        ("__all__ = ('A',)\n", "not a list literal"),
        ("__all__ = ['A']\n__all__ = ['B']\n", "found 2"),
        ("__all__ = [\n", "does not parse"),
        ("__all__ = []\nfrom .other_pattern import FluxRmsNormPatternGroup\n", "already imported from .other_pattern"),
    ],
)
def test_export_refuses_unexpected_layouts(source, match):
    with pytest.raises(UnexpectedLayout, match=match):
        ensure_exported(source.encode(), FLUX, WHERE)


# --- passes/__init__.py ---------------------------------------------------------------------------------------

REGISTRY = (
    "def activate():\n"
    "    pattern_registry = {  # ordered\n"
    '        "enable_a": ("APatternGroup", "..patterns"),  # trailing note on a\n'
    "        # b must come after a\n"
    '        "enable_b": ("BPatternGroup", "..patterns"),\n'
    "    }\n"
)
ENTRY = '        "enable_flux_rmsnorm": ("FluxRmsNormPatternGroup", "..patterns"),\n'


def _lines_with_entry_at(index: int) -> str:
    lines = REGISTRY.splitlines(keepends=True)
    # the comment above enable_b stays above it, the trailing note stays on a's line
    insert_at = {0: 2, 1: 3, 2: 5}[index]
    return "".join(lines[:insert_at] + [ENTRY] + lines[insert_at:])


@pytest.mark.parametrize("index", [0, 1, 2])
def test_registry_pairs_at_each_position(index):
    assert_pair(partial(ensure_registry_entry, index=index), remove_registry_entry, REGISTRY,
                _lines_with_entry_at(index))


def test_registry_append_is_the_default_and_follows_the_quote_and_module_style():
    src = "pattern_registry = {'enable_a': ('A', '.mypatterns')}\n"
    after = ("pattern_registry = {'enable_a': ('A', '.mypatterns'), "
             "'enable_flux_rmsnorm': ('FluxRmsNormPatternGroup', '.mypatterns')}\n")
    assert_pair(partial(ensure_registry_entry, index=None), remove_registry_entry, src, after)


def test_registry_empty_dict():
    assert_pair(partial(ensure_registry_entry, index=None), remove_registry_entry, "pattern_registry = {}\n",
                'pattern_registry = {"enable_flux_rmsnorm": ("FluxRmsNormPatternGroup", "..patterns")}\n')


def test_removing_a_hand_written_entry_keeps_the_comment_that_was_above_it():
    src = REGISTRY.replace("        # b must", "        # flux note\n" + ENTRY + "        # b must")
    out = remove_registry_entry(src.encode(), FLUX, WHERE).decode()
    assert "enable_flux_rmsnorm" not in out
    assert "# flux note\n        # b must come after a\n" in out


@pytest.mark.parametrize(
    ("source", "match"),
    [
        ("pattern_registry = dict(load())\n", "not a dict literal"),
        ("pattern_registry = {**base}\n", "not a string-keyed item"),
        ("pattern_registry = {}\npattern_registry = {}\n", "found 2"),
        ("registry = {}\n", "found 0"),
    ],
)
def test_registry_refuses_unexpected_layouts(source, match):
    with pytest.raises(UnexpectedLayout, match=match):
        ensure_registry_entry(source.encode(), FLUX, None, WHERE)


# --- compiliation_config.py -----------------------------------------------------------------------------------

FLAGS = (
    "import dataclasses\n\n\n@dataclasses.dataclass\nclass FusionPatterns:\n"
    "    enable_a: bool = True\n    # b: a comment that stays with b\n    enable_b: bool = True\n\n"
    "    def describe(self):\n        return 'x'\n\n\nclass Other:\n    pass\n"
)


def test_flag_pair_goes_after_the_last_field_before_methods():
    b = "    enable_b: bool = True\n"
    after = FLAGS.replace(b, b + "    enable_flux_rmsnorm: bool = True\n")
    assert_pair(ensure_flag, remove_flag, FLAGS, after)


def test_flag_at_the_end_of_the_class_keeps_the_blank_lines_below():
    src = "class FusionPatterns:\n    enable_a: bool = True\n\n\nX = 1\n"
    assert_pair(ensure_flag, remove_flag, src,
                "class FusionPatterns:\n    enable_a: bool = True\n    enable_flux_rmsnorm: bool = True\n\n\nX = 1\n")


@pytest.mark.parametrize(
    ("source", "match"),
    [
        ("class Patterns:\n    enable_a: bool = True\n", "expected one `class FusionPatterns`"),
        ("class FusionPatterns: pass\n", "no indented body"),
    ],
)
def test_flags_refuse_unexpected_layouts(source, match):
    with pytest.raises(UnexpectedLayout, match=match):
        ensure_flag(source.encode(), FLUX, WHERE)


# --- the real 3.1.0 files -------------------------------------------------------------------------------------

def test_real_files_round_trip_at_every_registry_position(mindiesd_tree):
    passes = (mindiesd_tree / PASSES_INIT).read_bytes()
    keys = registry_keys(passes, WHERE)
    for index in range(len(keys) + 1):
        edited = ensure_registry_entry(passes, FLUX, index, WHERE)
        assert registry_keys(edited, WHERE) == keys[:index] + [FLUX.flag] + keys[index:]
        assert len(edited.splitlines()) == len(passes.splitlines()) + 1  # one line, every comment kept
        assert remove_registry_entry(edited, FLUX, WHERE) == passes


def test_real_files_gain_exactly_their_lines(mindiesd_tree):
    init = (mindiesd_tree / PATTERNS_INIT).read_bytes()
    config = (mindiesd_tree / CONFIG).read_bytes()
    new_init, new_config = ensure_exported(init, FLUX, WHERE), ensure_flag(config, FLUX, WHERE)
    assert exported_names(new_init, WHERE) == exported_names(init, WHERE) + [FLUX.group]
    assert flag_names(new_config, WHERE) == flag_names(config, WHERE) + [FLUX.flag]
    added_init = set(new_init.splitlines()) - set(init.splitlines())
    assert added_init == {
        b"    'FluxRmsNormPatternGroup',",
        b"from .flux_rmsnorm_pattern import FluxRmsNormPatternGroup",
    }
    assert set(new_config.splitlines()) - set(config.splitlines()) == {b"    enable_flux_rmsnorm: bool = True"}
    assert remove_export(new_init, FLUX, WHERE) == init and remove_flag(new_config, FLUX, WHERE) == config


def test_crlf_files_and_tab_indents_keep_their_style():
    assert_pair(ensure_flag, remove_flag, "class FusionPatterns:\r\n\tenable_a: bool = True\r\n",
                "class FusionPatterns:\r\n\tenable_a: bool = True\r\n\tenable_flux_rmsnorm: bool = True\r\n")
    assert_pair(partial(ensure_registry_entry, index=None), remove_registry_entry,
                "def f():\r\n\tpattern_registry = {\r\n\t\t'a': ('A', '..patterns'),\r\n\t}\r\n",
                "def f():\r\n\tpattern_registry = {\r\n\t\t'a': ('A', '..patterns'),\r\n"
                "\t\t'enable_flux_rmsnorm': ('FluxRmsNormPatternGroup', '..patterns'),\r\n\t}\r\n")
