"""The three names that register a pattern group, derived from --model/--op or given explicitly, and validated.

    flag    enable_<model>_<op>        the FusionPatterns field and the pattern_registry key
    group   <Model><Op>PatternGroup    the list of pattern classes the pattern module defines
    module  <model>_<op>_pattern       the file patterns/<module>.py

A GraphPatternEntry carrier in that file registers through `register_<model>_<op>_graph_entries` instead of a group.

Word spellings for <Model><Op> (RmsNorm, AdaLn, MiniMax, ...) come from catalogs/registration.toml.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass

from sdcompile.catalogs import load
from sdcompile.util.errors import BadInput
from sdcompile.util.input_checks import check_name_length

SNAKE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")
FLAG = re.compile(r"enable_[a-z0-9]+(?:_[a-z0-9]+)*")
GROUP = re.compile(r"[A-Z][A-Za-z0-9]*PatternGroup")
MODULE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*_pattern")


@dataclass(frozen=True)
class RegistrationNames:
    flag: str  # enable_flux_rmsnorm
    group: str  # FluxRmsNormPatternGroup
    module: str  # flux_rmsnorm_pattern (no .py)
    derived: bool  # True when all three came from --model/--op

    @property
    def pattern_filename(self) -> str:
        return f"{self.module}.py"

    @property
    def entries_function(self) -> str:
        """What a GraphPatternEntry carrier in this module registers through: `register_<model>_<op>_graph_entries`
        (the maintainers' spelling), called by passes/__init__.py under the flag."""
        return f"register_{self.module.removesuffix('_pattern')}_graph_entries"

    @property
    def pass_module(self) -> str:
        """A custom graph pass's module in passes/ (written only on request: upstream forbids them)."""
        return f"{self.module.removesuffix('_pattern')}_pass"

    @property
    def pass_class(self) -> str:
        """The custom graph pass's class, which the backend's graph_rewrite_after_freezing calls."""
        return f"{self.group.removesuffix('PatternGroup')}GraphPass"

    @property
    def pass_test(self) -> str:
        """The custom graph pass's generated test, relative to the target root."""
        return f"tests/compilation/passes/test_{self.pass_module}.py"

    @property
    def import_module(self) -> str:
        """The relative module patterns/__init__.py imports the group from."""
        return f".{self.module}"


def camel(words: str) -> str:
    """`minimax_h3_rmsnorm` -> `MiniMaxH3RmsNorm`, using the catalog's spellings for known words."""

    spellings = load("registration").get("camel_case", {})
    return "".join(spellings.get(w, w[:1].upper() + w[1:]) for w in words.split("_"))


def _check(kind: str, value: str, pattern: re.Pattern[str], rule: str, example: str) -> str:
    if not pattern.fullmatch(value) or keyword.iskeyword(value):
        raise BadInput(f"{kind} {value!r} does not follow the naming rule {rule}", f"use a name like {example!r}")
    return value


def validate_flag(flag: str) -> str:
    return _check("flag", flag, FLAG, "enable_<model>_<op> (lowercase words joined by _)", "enable_flux_rmsnorm")


def validate_group(group: str) -> str:
    return _check("group", group, GROUP, "<Model><Op>PatternGroup (a CamelCase identifier)", "FluxRmsNormPatternGroup")


def validate_module(module: str) -> str:
    module = module[:-3] if module.endswith(".py") else module
    if "/" in module or "." in module:
        raise BadInput(
            f"module {module!r} must be a file name inside patterns/, not a path or dotted name",
            "pass just the file name, e.g. flux_rmsnorm_pattern",
        )
    rule = "<model>_<op>_pattern (lowercase words joined by _)"

    check_name_length(f"test_{module}.py", "the pattern test file name")  # the longest file named after it
    return _check("module", module, MODULE, rule, "flux_rmsnorm_pattern")


def _snake_word(kind: str, value: str) -> str:
    if not SNAKE.fullmatch(value):
        raise BadInput(
            f"--{kind} {value!r} cannot form a registration name (lowercase letters, digits and _ only)",
            "use the short name (e.g. flux, rmsnorm), or pass --flag, --group and --module explicitly",
        )
    return value


def registration_names(
    model: str | None,
    op: str | None,
    flag: str | None = None,
    group: str | None = None,
    module: str | None = None,
) -> RegistrationNames:
    """The names to register: explicit ones validated as given, the others derived from model and op."""
    derived = not (flag and group and module)
    if derived:
        if not model or not op:
            raise BadInput("need --model and --op to derive the names", "pass them, or all of --flag/--group/--module")
        stem = f"{_snake_word('model', model)}_{_snake_word('op', op)}"
    return RegistrationNames(
        flag=validate_flag(flag) if flag else validate_flag(f"enable_{stem}"),
        group=validate_group(group) if group else validate_group(f"{camel(stem)}PatternGroup"),
        module=validate_module(module) if module else validate_module(f"{stem}_pattern"),
        derived=not (flag or group or module),
    )
