"""Phase 4 for a custom graph pass (scaffold --path graph-pass, only on request: upstream forbids them): it has no
pattern group to run alone, so verify runs the two-layer test scaffold generated for it, by pytest with sdcompile's
device plugin, as a user runs it (the same command verify prints)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from sdcompile.core.target.naming import RegistrationNames, registration_names
from sdcompile.core.target.registry_audit import module_defines
from sdcompile.core.zoo.deadline import TIMEOUT_ENV
from sdcompile.phases.verify.results import GraphPassTest
from sdcompile.util.command_line import CommandLine, quoted
from sdcompile.util.errors import BadInput
from sdcompile.util.fsutil import atomic_write_text


def graph_pass_names(tree, target, group: str | None, model_word: str | None, op: str | None):
    """The registration names of the custom graph pass under test, or None when verify checks pattern groups: the
    pair's own pass (--model/--op, when no group or GraphPatternEntry carrier of theirs is registered) or the pass
    --group names (its class, <Model><Op>GraphPass, defined in passes/)."""

    def defined(names: RegistrationNames) -> bool:
        return module_defines(tree.passes_dir / f"{names.pass_module}.py", names.pass_class) is None

    registered = {g.group for g in target.groups} | {g.flag for g in target.groups}
    if group:
        if group in registered or not group.endswith("GraphPass"):
            return None
        for path in sorted(tree.passes_dir.glob("*_pass.py")):
            names = RegistrationNames(f"enable_{path.stem[:-5]}", group[: -len("GraphPass")] + "PatternGroup",
                                      f"{path.stem[:-5]}_pattern", derived=False)
            if defined(names):
                return names
        return None
    if not (model_word and op):
        return None
    names = registration_names(model_word, op)
    if names.group in registered or names.flag in registered or not defined(names):
        return None
    return names


def pytest_args(names: RegistrationNames, plain_cpu: bool) -> list[str]:
    device = ["--sdcompile-device", "plain-cpu"] if plain_cpu else []
    return ["-m", "pytest", "-q", "-p", "sdcompile.testing.pytest_plugin", *device, names.pass_test]


def test_command(tree_root: Path, names: RegistrationNames, plain_cpu: bool, timeout: float | None) -> str:
    """The test's command as a user pastes it (in the target's root, with verify's --timeout for its model)."""

    env = ((TIMEOUT_ENV, quoted(timeout)),) if timeout is not None else ()
    return str(CommandLine("python", tuple(pytest_args(names, plain_cpu)), cd=tree_root, env=env))


def run_graph_pass_test(tree, names: RegistrationNames, plain_cpu: bool, timeout: float | None,
                        log: Path) -> GraphPassTest:
    """Run the pass's generated test; its output goes to `log`."""

    if not (tree.root / names.pass_test).is_file():
        raise BadInput(f"{names.pass_class} has no generated test at {names.pass_test} in {tree.root}",
                       "scaffold --path graph-pass writes it beside the pass; write it by hand for a pass of your own")
    env = dict(os.environ)
    if timeout is not None:  # the test's model build and forwards keep to verify's --timeout
        env[TIMEOUT_ENV] = str(timeout)
    proc = subprocess.run([sys.executable, *pytest_args(names, plain_cpu)], cwd=tree.root, capture_output=True,
                          text=True, env=env)
    atomic_write_text(log, proc.stdout + proc.stderr)
    last = (proc.stdout.strip().splitlines() or ["(no output)"])[-1]
    pass_file = str((tree.passes_dir / f"{names.pass_module}.py").relative_to(tree.root))
    return GraphPassTest(names.pass_class, pass_file, names.pass_test, test_command(tree.root, names, plain_cpu,
                                                                                    timeout),
                         proc.returncode == 0, last, str(log))
