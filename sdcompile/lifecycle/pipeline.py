"""`sdcompile run`: the seven phases in order for one model/op pair, in one process, with every gate recorded.

1. The target (sdcompile.lifecycle.target): `--repo` (the user's tree, which scaffold and register then edit), else
   a scratch copy of the real MindIE-SD release from the package cache, kept in the pair's workspace folder
   (`<pair>/run/mindiesd-<ver>/`) so that later runs resume on the same tree. The whole run holds the pair's lock
   (sdcompile.workspace.locks): a second run of the pair waits briefly, then exits 2 naming this one.
2. The device is activated once (real NPU, else emulated; `--plain-cpu`), so torch, diffusers and the target are
   imported once for all phases.
3. Resume (sdcompile.lifecycle.state): phases that passed in an earlier run with the same inputs are kept; the
   first one that did not, and everything after it, runs. `restart` runs everything again on a fresh scratch copy.
4. Each phase runs through its own core function (sdcompile.lifecycle.steps says what it means in the pipeline
   and its gate). The run stops at the first failing gate with the commands to run next.
5. `<pair>/run/report.md` holds the lifecycle table, every phase's summary and evidence, and what this machine
   did not exercise.

`dry_run` previews what the run would do to the tree: phases 1-3 run with scaffold and register writing nothing
(their files and edits are returned as diffs), phases 4-7 are not run (they need those files), and neither the
resume memory, the phase records of scaffold and register, nor the report is touched.
"""

from __future__ import annotations

import time
from pathlib import Path

from sdcompile.core.environment import collect_versions
from sdcompile.core.ops import OPS
from sdcompile.core.profiles.locate import run_folders
from sdcompile.core.zoo.model_step import ModelRequest
from sdcompile.core.zoo.models import parse_dtype
from sdcompile.lifecycle.commands import Commands
from sdcompile.lifecycle.context import RunContext, Step, load_scaffold_facts
from sdcompile.lifecycle.options import DEFAULT_MAX_INFLATION, DEFAULT_MIN_COSINE, RunOptions
from sdcompile.lifecycle.render import markdown_report
from sdcompile.lifecycle.results import PhaseOutcome, RunResult  # noqa: F401 - run's results, re-exported
from sdcompile.lifecycle.run_pages import report_pages
from sdcompile.lifecycle.state import TREE_READERS, KeptPhase, RunMemory, phase_fingerprint, tree_hash
from sdcompile.lifecycle.steps import GATES, STEPS
from sdcompile.lifecycle.target import run_target
from sdcompile.phases.choices import SCAFFOLD_PATHS as PATHS
from sdcompile.phases.choices import Decision
from sdcompile.util.choices import check_choice
from sdcompile.util.errors import BadInput
from sdcompile.util.fsutil import atomic_write_text
from sdcompile.util.log import get_logger
from sdcompile.workspace.artifacts import write_artifact
from sdcompile.workspace.locks import pair_lock
from sdcompile.workspace.phases import PHASE_NUMBER, PHASES
from sdcompile.workspace.store import Workspace

log = get_logger(__name__)


class RunListener:
    """Progress hooks for the CLI (a rich progress bar); the core itself never prints."""

    def phase_started(self, number: int, phase: str) -> None:
        pass

    def phase_progress(self, text: str) -> None:
        pass

    def phase_done(self, outcome: PhaseOutcome) -> None:
        pass


def check_run_options(model: str | None, model_file: str | None, op: str, dtype: str, name: str | None, path: str,
                      min_cosine: float, max_inflation: float, build=None):
    """(op, dtype, model spec) normalised, or BadInput for the first bad option: a typo fails before anything
    heavy."""

    op = check_choice(op, OPS, "op", hint=" (run drives one op at a time)")
    dtype = parse_dtype(dtype)
    path = check_choice(path, PATHS, "--path")
    if not 0.0 < min_cosine <= 1.0:
        raise BadInput(f"--min-cosine {min_cosine} is outside (0, 1]", "use e.g. 0.999")
    if max_inflation < 0:
        raise BadInput(f"--max-inflation must not be negative (got {max_inflation})", "pass a ratio such as 2")
    request = ModelRequest(model, model_file, build, dtype)
    request.pattern_word(name)
    return op, dtype, request.spec


def run_lifecycle(
    model: str | None = None,
    model_file: str | None = None,
    op: str = "rmsnorm",
    dtype: str = "bf16",
    plain_cpu: bool = False,
    name: str | None = None,
    repo: Path | str | None = None,
    workdir: Path | str | None = None,
    restart: bool = False,
    min_cosine: float = DEFAULT_MIN_COSINE,
    max_inflation: float = DEFAULT_MAX_INFLATION,
    path: str = "auto",
    listener: RunListener | None = None,
    dry_run: bool = False,
    timeout: float | None = None,
    build=None,
) -> RunResult:
    """Everything `sdcompile run` does; see the module docstring. `timeout` is every phase's: seconds the model's
    build and each forward may take (None: $SDCOMPILE_TIMEOUT, else 600; 0: no limit)."""

    started = time.perf_counter()
    listener = listener or RunListener()
    op, dtype, spec = check_run_options(model, model_file, op, dtype, name, path, min_cosine, max_inflation, build)
    if dry_run and restart:
        raise BadInput("--dry-run and --restart cannot be combined (a dry run keeps and discards nothing)",
                       "drop --restart to preview, or --dry-run to run everything again")

    ws = Workspace(workdir)
    run_dir = ws.pair_dir(spec.name, op, create=False) / "run"  # created by the first thing written there
    # One command at a time on the pair (its lock is in the pair folder, workspace.locks): two runs would build the
    # same scratch copy and write the same profiles, which integrate would then read as two ranks.
    with pair_lock(run_dir.parent):
        target = run_target(repo, run_dir, restart)
        tree, source = target.tree, target.source

        from sdcompile.core.npu.device import activate_for_command

        device = activate_for_command(plain_cpu)  # once, before any phase imports diffusers

        options = RunOptions(model, model_file, op, dtype, plain_cpu, name, path, str(tree.root), min_cosine,
                             max_inflation, user_repo=Path(repo) if repo else None,
                             workdir=Path(workdir) if workdir else None, dry_run=dry_run, timeout=timeout,
                             build=spec.build)
        commands = Commands(options)
        ctx = RunContext(options, spec.name, tree, ws, device, run_dir, commands, listener.phase_progress)
        memory = RunMemory(run_dir)
        if restart or (target.fresh and not dry_run):  # a remade copy has none of the earlier runs' edits
            memory.clear()
        if dry_run:
            first = 0  # a preview runs phases 1-3 whatever was kept, and remembers nothing
        else:
            first = _first_to_run(ctx, memory, options)
            memory.forget_from(PHASES[first:])
        if first > PHASES.index("scaffold"):  # scaffold is kept: later phases need what it decided
            ctx.scaffold = load_scaffold_facts(ctx)
        log.info("%s/%s on %s, target %s: %s", spec.name, op, device.label, tree.root,
                 f"keeping phases 1-{first}, running from phase {first + 1}" if first else "running every phase")

        outcomes: list[PhaseOutcome] = []
        failed: Step | None = None
        stopped_at = None
        found: list[Step] = []  # passing steps with a finding
        for index, phase in enumerate(PHASES):
            if index < first:
                outcome = _kept(ctx, phase, memory.phases[phase].seconds if phase in memory.phases else None)
            elif failed is not None:
                outcome = _not_run(ctx, phase)
            elif dry_run and index > PHASES.index("register"):
                outcome = _not_run(ctx, phase, "dry run: a preview stops after phase 3 (phases 4-7 test what scaffold "
                                                "and register write)")
            else:
                listener.phase_started(PHASE_NUMBER[phase], phase)
                t = time.perf_counter()
                step = STEPS[phase](ctx)
                outcome = _done(ctx, phase, step, time.perf_counter() - t)
                log.info("phase %d %s: %s in %.1f s", PHASE_NUMBER[phase], phase, step.verdict, time.perf_counter() - t)
                if step.verdict == "fail":
                    failed, stopped_at = step, phase
                if step.finding and step.verdict != "fail":
                    found.append(step)
                if step.verdict != "fail" and not dry_run:
                    record = ws.load_pair(spec.name, op).phases[phase]
                    memory.remember(phase, KeptPhase(phase_fingerprint(phase, options), record.when,
                                                     tree_hash(tree.compilation), round(outcome.seconds, 1)))
            outcomes.append(outcome)
            listener.phase_done(outcome)

        result = RunResult(
            model=spec.name,
            op=op,
            dtype=dtype,
            device=device.label,
            device_reason=device.reason,
            target=str(tree.root),
            target_version=tree.version,
            target_source=source,
            versions=collect_versions(tree, device),
            workspace=str(ws.root),
            pair_folder=str(ctx.pair_dir),
            cwd=str(Path.cwd()),
            phases=tuple(outcomes),
            passed=failed is None,
            resumed_from=PHASES[first] if first < len(PHASES) else None,
            stopped_at=stopped_at,
            stop_reason=failed.why if failed else None,
            dead_end=bool(failed and failed.dead_end),
            next_commands=_next_commands(ctx, failed, stopped_at, found),
            findings=tuple(f"{step.finding}" for step in found),
            resume_command=commands.run(preview=False),
            not_exercised=_not_exercised(device, PHASE_NUMBER[stopped_at] if failed else
                                         PHASE_NUMBER["register"] if dry_run else len(PHASES)),
            report="" if dry_run else str(run_dir / "report.md"),
            seconds=round(time.perf_counter() - started, 1),
            dry_run=dry_run,
            previews=tuple(ctx.previews),
        )
        if not dry_run:
            _write_report(result, run_dir)
        return result


def _next_commands(ctx: RunContext, failed: Step | None, stopped_at: str | None, found: list[Step]) -> tuple:
    opt = ctx.options
    commands = ctx.commands
    if failed and failed.dead_end:  # the same run stops here the same way: no resume to offer
        return failed.next_commands
    if failed:
        again = "preview again" if opt.dry_run else f"then resume from {stopped_at}"
        return (*failed.next_commands, commands.run(comment=again))
    if not opt.dry_run:
        return tuple(command for step in found for command in step.next_commands)
    steps = []
    if ctx.scaffold is not None and ctx.scaffold.decision == Decision.GENERATE:
        steps.append(commands.scaffold(("--dry-run",), comment="the source it would generate"))
    return (*steps, commands.run(preview=False, comment="write them and run all seven phases"))


# --------------------------------------------------------------------------------------------------- resume
def _first_to_run(ctx: RunContext, memory: RunMemory, options: RunOptions) -> int:
    """Index of the first phase that has to run (len(PHASES) when every phase is kept)."""
    state = ctx.ws.load_pair(ctx.model_name, ctx.options.op)
    current_tree = tree_hash(ctx.tree.compilation)
    for index, phase in enumerate(PHASES):
        kept = memory.phases.get(phase)
        record = state.phases.get(phase) if state else None
        if kept is None or record is None or record.verdict == "fail":
            return index
        if record.when != kept.when or kept.fingerprint != phase_fingerprint(phase, options):
            return index
        if phase in TREE_READERS and kept.tree != current_tree:
            return index
        if phase == "scaffold" and load_scaffold_facts(ctx) is None:
            return index
        if phase in ("integrate", "copy-audit") and not (_has_profile(ctx.eager_profile)
                                                          and _has_profile(ctx.compile_profile)):
            return index
    return len(PHASES)


def _has_profile(folder: Path) -> bool:
    return bool(run_folders(folder))


# ------------------------------------------------------------------------------------------------- outcomes
def _command(ctx: RunContext, phase: str) -> str:
    """The phase on its own, as a user would type it after this run."""
    opt = ctx.options
    cmds = ctx.commands
    facts = ctx.scaffold
    if phase == "analyze":
        return cmds.analyze()
    if phase == "scaffold":
        return cmds.scaffold()
    if phase == "register":
        if facts is not None and facts.registers:
            explicit = opt.name is not None and opt.name != ctx.model_name  # names not derivable from the model
            return cmds.register(ctx.model_name, (("--flag", facts.flag), ("--group", facts.group),
                                                  ("--module", facts.module)) if explicit else ())
        return cmds.register_check()
    groups = ctx.groups_to_check()  # a custom graph pass's class: verify runs its generated test
    graph_pass = facts is not None and facts.generated_graph_pass
    if phase == "verify":  # nothing to verify when the model fuses the op itself
        return " && ".join(cmds.verify(g) for g in groups)
    if phase == "debug":
        return "" if graph_pass or (facts is not None and facts.generated_entries) else cmds.debug(groups)
    if phase == "integrate":
        return cmds.integrate(ctx.eager_profile, ctx.compile_profile, ctx.run_dir / "integrate.html")
    return cmds.copy_audit(ctx.eager_profile, ctx.compile_profile, ctx.run_dir / "copy-audit.html")


def _recorded(ctx: RunContext, phase: str):
    state = ctx.ws.load_pair(ctx.model_name, ctx.options.op)
    return state.phases.get(phase) if state else None


def _done(ctx: RunContext, phase: str, step: Step, seconds: float) -> PhaseOutcome:
    record = _recorded(ctx, phase)
    if ctx.options.dry_run and phase != "analyze":  # a preview records nothing: an earlier run's record is not its own
        return PhaseOutcome(PHASE_NUMBER[phase], phase, step.verdict, GATES[phase], step.summary,
                            ctx.device.label if phase == "scaffold" else "n/a", round(seconds, 1),
                            _command(ctx, phase), (), verdict=step.verdict)
    return PhaseOutcome(PHASE_NUMBER[phase], phase, step.verdict, GATES[phase], step.summary,
                        record.device if record else "n/a", round(seconds, 1), _command(ctx, phase),
                        record.evidence if record else (), verdict=step.verdict)


def _kept(ctx: RunContext, phase: str, seconds: float | None) -> PhaseOutcome:
    record = _recorded(ctx, phase)
    return PhaseOutcome(PHASE_NUMBER[phase], phase, "kept", GATES[phase],
                        f"{record.verdict} on {record.when} with the same inputs: {record.summary}", record.device,
                        0.0, _command(ctx, phase), record.evidence, verdict=record.verdict, kept_seconds=seconds)


def _not_run(ctx: RunContext, phase: str, why: str = "an earlier gate failed") -> PhaseOutcome:
    return PhaseOutcome(PHASE_NUMBER[phase], phase, "not run", GATES[phase], why, "n/a", 0.0, _command(ctx, phase), ())


def _not_exercised(device, reached: int) -> tuple[str, ...]:
    """What the phases up to number `reached` could not do on this machine."""
    if device.is_real:
        return ()
    out = [f"the NPU itself: this run used {device.label}, so torch_npu's and MindIE-SD's compiled fused ops ran on "
           "sdcompile's CPU reference kernels under their documented contracts, and for MindIE-SD's Python fused ops "
           f"{device.npu_kernels or 'the tree CPU fallback ran'} (numerics and graphs are real, speed is not)"]
    if reached >= PHASE_NUMBER["verify"]:
        out.append("verify's compiled-vs-eager timing, which runs only on a real NPU")
    if reached >= PHASE_NUMBER["integrate"]:
        out.append("NPU profiles: phases 6-7 read torch.profiler CPU captures laid out as torch_npu's, each ATen op "
                   "mapped to the Ascend op type an NPU launch would report; durations are CPU times, so copy-audit's "
                   "gate compares copy-kernel counts and phase 6's benefit weighs the data each kernel moves (from its "
                   "input shapes), not NPU kernel time")
    if reached >= PHASE_NUMBER["copy-audit"]:
        out.append("MindIE-SD's ACLGraph capture, copy-audit's remedy C (CompilationConfig.aclgraph_with_compile): it "
                   "needs torch_npu and a device (`sdcompile backends`)")
    if device.mode == "plain-cpu":
        out.append("the NPU host's graphs: --plain-cpu traced diffusers as a process without torch_npu, so its own "
                   "NPU branches (e.g. RMSNorm calling npu_rms_norm) did not run")
    return tuple(out)


def _write_report(result: RunResult, run_dir: Path) -> None:
    write_artifact("run-result", run_dir / "run-result.json", result)
    atomic_write_text(Path(result.report), markdown_report(
        result, report_pages(run_dir, (e for p in result.phases for e in p.evidence))))


__all__ = ["DEFAULT_MAX_INFLATION", "DEFAULT_MIN_COSINE", "OPS", "PhaseOutcome", "RunListener", "RunResult",
           "run_lifecycle"]
