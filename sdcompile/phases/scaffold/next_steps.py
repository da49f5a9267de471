"""The commands scaffold prints to run next (ScaffoldResult.next_steps): each with the options this scaffold ran
with (--model or --model-file, --op, --name, --dtype, --plain-cpu, --timeout, --workdir, and --repo when the tree
would not be found again without it), built by sdcompile.util.command_line so that each runs as printed."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from sdcompile.phases.choices import Carrier, Decision
from sdcompile.phases.scaffold.facts import other_math_only
from sdcompile.util.command_line import CommandLine, SdcompileCommand

DEFAULT_DTYPE = "bf16"


@dataclass(frozen=True)
class Invocation:
    """What this scaffold was run with, as the next commands repeat it."""

    model: str | None  # what --model takes to name the model again (None: a model file)
    model_file: str | None  # --model-file as given
    op: str
    dtypes: tuple[str, ...]
    plain_cpu: bool
    path: str  # --path
    name: str | None  # --name as given
    word: str  # the <model> word of the registration names: --name, else the model's workspace name
    timeout: float | None
    repo: Path | None  # the tree, when a pasted command would not find it again without --repo
    workdir: Path | None  # --workdir as given (None: the default, found the same way again)
    tree_root: Path
    pair_dir: Path  # the pair's workspace folder (scaffold/backend.diff is kept there)
    pair_model: str | None = None  # the pair's model word (the zoo name), when --model named the model
    build: tuple[tuple[str, Path | str | int], ...] = ()  # the model-build options as given (ModelBuild.options())

    @property
    def renamed(self) -> bool:
        """Whether the registration names come from another word than the pair's (the target's own held them)."""
        return self.name is None and self.pair_model is not None and self.word != self.pair_model

    def command(self, command: str, **fields) -> SdcompileCommand:
        """`sdcompile command` for this model and op, on this tree and workspace; `fields` override."""
        base = SdcompileCommand(
            command, model=self.model, model_file=None if self.model else self.model_file, build=self.build,
            op=self.op,
            dtype=self.dtypes[0] if self.dtypes[0] != DEFAULT_DTYPE else None, plain_cpu=self.plain_cpu,
            timeout=self.timeout, repo=self.repo, workdir=self.workdir)
        return replace(base, **fields)

    def scaffold(self, **fields) -> SdcompileCommand:
        """This scaffold again (its --dtype list, --name and --path), with `fields` changed."""
        dtypes = ",".join(self.dtypes)
        return self.command("scaffold", **{"name": self.name, "path": self.path if self.path != "auto" else None,
                                           "dtype": dtypes if dtypes != DEFAULT_DTYPE else None, **fields})

    def pytest(self, test: str, comment: str = "") -> CommandLine:
        device = ("--sdcompile-device", "plain-cpu") if self.plain_cpu else ()
        return CommandLine("python", ("-m", "pytest", "-p", "sdcompile.testing.pytest_plugin", *device, test),
                           cd=self.tree_root, comment=comment)


def next_steps(run: Invocation, decision: str, variants, files, rows, names, written: bool,
               dry_run: bool) -> tuple[str, ...]:
    """The commands that come next for this decision."""
    if decision == Decision.REUSE:
        groups = sorted({g for r in rows for g in r.production.groups})
        steps = [run.command("verify", groups=(g,), comment="numerics of the group that covers the sites")
                 for g in groups]
        steps.append(run.scaffold(flags=("--force",), comment="generate a pattern anyway"))
    elif (decision == Decision.CANNOT_GENERATE and any(r.graph_pass_can_match for r in rows)
          and run.path == Carrier.REPLACEMENT):
        steps = [run.scaffold(path=Carrier.GRAPH_ENTRY, comment="a GraphPatternEntry matches the graph's own nodes")]
    elif decision == Decision.CANNOT_GENERATE and other_math_only(rows):
        steps = []  # no fused kernel of the target computes these sites: no group, pattern or debug run changes that
    elif decision == Decision.CANNOT_GENERATE:
        guide, what = {Carrier.GRAPH_PASS: ("custom-graph-pass", "custom graph pass"),
                       Carrier.GRAPH_ENTRY: ("graph-pattern-entry", "GraphPatternEntry")}.get(
            run.path, ("pattern-templates", "pattern"))
        steps = [run.command("debug", comment=f"why the target's own {run.op} groups miss these sites, and the fix "
                             "for each"),
                 SdcompileCommand("explain", (guide,), comment=f"a dead end for scaffold: nothing it generates covers "
                                  f"these sites, write the {what} by hand (docs/{guide}.md)")]
    elif decision == Decision.ALREADY_FUSED:
        steps = [run.scaffold(plain_cpu=True, comment="the chain a process without torch_npu traces")]
    elif variants and (written or dry_run):
        steps = _after_generating(run, variants, files, names, dry_run)
    else:
        steps = []
    return tuple(str(step) for step in steps)


def _after_generating(run: Invocation, variants, files, names, dry_run: bool) -> list:
    """Register, verify and test what scaffold generated (a dry run: write it first)."""
    later = " (once written)" if dry_run else ""
    steps: list = [run.scaffold(comment="write the files")] if dry_run else []
    # (path, its test's file kind, what register edits, what verify checks, what verify selects it by)
    registered = (("replacement", "pattern test", "the three registration edits",
                   "the group on its search functions and the model", names.group),
                  ("graph-entry", "graph entries test", "its flag and the call in passes/__init__.py",
                   "the entries on the model", names.flag))
    for path, test_kind, edits, checks, selector in registered:
        if not any(v.path == path for v in variants):
            continue
        # register derives the three names from its --model word, which is also the pair it records under: names
        # chosen beside the target's own are spelled out so the record stays the pair's. verify derives the group
        # from --model unless --name, a model file or that choice gave another word.
        names_given = ((("--flag", names.flag), ("--group", names.group), ("--module", names.module))
                       if run.renamed else ())
        steps.append(SdcompileCommand("register", model=run.pair_model if run.renamed else run.word, op=run.op,
                                      options=names_given, repo=run.repo, workdir=run.workdir,
                                      comment=f"{edits}{later}"))
        own = run.model is not None and run.name is None and not run.renamed
        steps.append(run.command("verify", groups=() if own else (selector,), comment=f"{checks}{later}"))
        test = next(r.path for r in files if r.kind == test_kind)
        steps.append(run.pytest(test, comment=f"the generated test{later}"))
    if any(v.path == Carrier.GRAPH_PASS for v in variants):
        diff = run.pair_dir / "scaffold" / "backend.diff"
        # -i absolute: patch reads it after changing into -d's folder
        steps.append(CommandLine("patch", ("-d", run.tree_root, "-p1", "-i", str(diff.resolve())),
                                 comment=f"the backend edit that calls the pass (or git apply){later}"))
        test = next(r.path for r in files if r.kind == "graph pass test")
        steps.append(run.pytest(test, comment=f"the generated test{later}"))
    return steps
