"""The rendering cases: every command's result on the Flux and Wan lifecycles, kept as its --json document in
data/<case>.json (written by render_capture.py), read back into its dataclass and rendered at a width as the CLI
renders it.

    python tests/rendering/render_cases.py      # rewrite golden/<case>.<width>.txt from data/ (a renderer changed)
    python tests/rendering/render_capture.py    # run the commands again and rewrite data/ (slow: two lifecycles)

`make golden` runs the first."""

from __future__ import annotations

import importlib
import json
import sys
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
GOLDEN = HERE / "golden"
WIDTHS = (80, 200)
SCRATCH = "/home/user/demo"  # the folder the commands ran in, as data/ holds it (render_capture.py writes it)


@dataclass(frozen=True)
class Case:
    argv: tuple[str, ...]  # the command after `sdcompile`; render_capture.py fills in {model}, {tree}, {profiles}
    result: str  # "module:Class" of its --json document
    render: str  # "module:function" the CLI hands the result to
    options: dict = field(default_factory=dict)  # what the CLI binds (debug's show_patterns, integrate's top)
    exit_code: int = 0
    models: tuple[str, ...] = ("flux", "wan")
    verdict: str = ""  # "module:function" --json takes the closing line from; "" is the render module's `verdict`

    @property
    def verdict_function(self) -> str:
        return self.verdict or f"{self.render.split(':')[0]}:verdict"


TREE = "{tree}"
PROFILES = "{profiles}"
LIFECYCLE = {
    "run": Case(("run", "--model", "{model}", "--op", "rmsnorm"), "sdcompile.lifecycle.results:RunResult",
                "sdcompile.lifecycle.render:render_run"),
    "analyze": Case(("analyze", "--model", "{model}", "--op", "rmsnorm"),
                    "sdcompile.phases.analyze.results:AnalyzeResult", "sdcompile.phases.analyze.render:render_analyze"),
    "scaffold": Case(("scaffold", "--model", "{model}", "--op", "rmsnorm", "--repo", TREE),
                     "sdcompile.phases.scaffold.results:ScaffoldResult",
                     "sdcompile.phases.scaffold.render:render_scaffold"),
    "scaffold-force": Case(("scaffold", "--model", "{model}", "--op", "rmsnorm", "--repo", TREE, "--force",
                            "--dry-run"), "sdcompile.phases.scaffold.results:ScaffoldResult",
                           "sdcompile.phases.scaffold.render:render_scaffold", models=("flux",)),
    "register": Case(("register", "--check", "--import", "--repo", TREE),
                     "sdcompile.core.target.registry_audit:RegistrationAudit",
                     "sdcompile.phases.register.render:render_audit",
                     verdict="sdcompile.phases.register.render:audit_verdict"),
    "verify": Case(("verify", "--model", "{model}", "--op", "rmsnorm", "--group", "WanRmsNormPatternGroup", "--repo",
                    TREE), "sdcompile.phases.verify.results:VerifyReport",
                   "sdcompile.phases.verify.render:render_verify"),
    "debug": Case(("debug", "--model", "{model}", "--op", "rmsnorm", "--group", "WanRmsNormPatternGroup", "--repo",
                   TREE), "sdcompile.phases.debug.results:DebugResult", "sdcompile.phases.debug.render:render_debug",
                  {"show_patterns": False}),
    "debug-mismatch": Case(("debug", "--model", "{model}", "--op", "rmsnorm", "--group", "RMSNormPatternGroup",
                            "--repo", TREE), "sdcompile.phases.debug.results:DebugResult",
                           "sdcompile.phases.debug.render:render_debug", {"show_patterns": False}, exit_code=1,
                           models=("flux",)),
    "integrate": Case(("integrate", f"{PROFILES}/eager", f"{PROFILES}/compile", "--model", "{model}", "--op",
                       "rmsnorm", "--repo", TREE), "sdcompile.phases.integrate.results:IntegrateReport",
                      "sdcompile.phases.integrate.render:render_integrate", {"top": 25}),
    "copy-audit": Case(("copy-audit", f"{PROFILES}/eager", f"{PROFILES}/compile", "--model", "{model}", "--op",
                        "rmsnorm", "--max-inflation", "2"), "sdcompile.phases.copy_audit.results:CopyAuditReport",
                       "sdcompile.phases.copy_audit.render:render_copy_audit", {"top": 15}),
    "status": Case(("status", "--repo", TREE), "sdcompile.phases.status.results:StatusReport",
                   "sdcompile.phases.status.render:render_status"),
    "profile": Case(("profile", "--model", "{model}", "--mode", "compile", "--out", "profile-out", "--repo", TREE,
                     "--steps", "1", "--force"), "sdcompile.phases.profile.results:ProfileReport",
                    "sdcompile.phases.profile.render:render_profile", models=("flux",)),
    "backends": Case(("backends",), "sdcompile.phases.backends.results:BackendsReport",
                     "sdcompile.phases.backends.render:render_backends", models=("flux",)),
    "doctor": Case(("doctor", "--repo", TREE), "sdcompile.phases.doctor.results:DoctorReport",
                   "sdcompile.phases.doctor.render:render_doctor", models=("flux",)),
    "models": Case(("models",), "sdcompile.phases.models.results:ModelsReport",
                   "sdcompile.phases.models.render:render_models", models=("flux",)),
    "explain": Case(("explain",), "sdcompile.phases.explain.results:TopicList",
                    "sdcompile.phases.explain.render:render_explain", models=("flux",)),
    "explain-mismatch": Case(("explain", "mismatch"), "sdcompile.phases.explain.results:MismatchExplanation",
                             "sdcompile.phases.explain.render:render_explain", models=("flux",)),
}
# case name: "<model>.<command>"; the lifecycle's own commands on both models, the others once
CASES = {f"{model}.{name}": case for name, case in LIFECYCLE.items() for model in case.models}
# The golden files: every case at both widths. They are the renderings as they are: data/ holds no temporary path,
# timing or version of the machine that captured it (render_capture.py).
GOLDEN_CASES = tuple(CASES)


def _named(path: str):
    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)


def load(name: str):
    """The case's result, read back from its --json document into its dataclass."""
    from sdcompile.util.serialize import from_jsonable

    return from_jsonable(_named(CASES[name].result), json.loads((DATA / f"{name}.json").read_text("utf-8")))


def render(name: str, width: int, result=None) -> str:
    """What the command prints for the case on a `width`-column pipe."""
    from sdcompile.rendering.output import rendered

    case = CASES[name]
    return rendered(partial(_named(case.render), **case.options), load(name) if result is None else result, width)


def golden_path(name: str, width: int) -> Path:
    return GOLDEN / f"{name}.{width}.txt"


def write_golden() -> None:
    GOLDEN.mkdir(exist_ok=True)
    for name in GOLDEN_CASES:
        for width in WIDTHS:
            golden_path(name, width).write_text(render(name, width), encoding="utf-8")
            print(golden_path(name, width).relative_to(HERE.parents[1]))


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    write_golden()
