"""The lifecycle's last two steps, which profile the model: integrate (phase 6: the pattern in the compiled model,
its fused kernel in the profiles, the output against eager) and copy-audit (phase 7: copy kernels, compile vs eager).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from sdcompile.lifecycle.context import RunContext, Step
from sdcompile.util.command_line import SdcompileCommand
from sdcompile.util.errors import GateFailed

# The run's own reports sit side by side in its folder, and each links to the others (label, relative href).
RUN_LINKS = (("integrate report", "integrate.html"), ("copy-audit report", "copy-audit.html"),
             ("the run's report (report.md)", "report.md"))


# ----------------------------------------------------------------------------------------------- 6 integrate
def integrate_step(ctx: RunContext) -> Step:
    from sdcompile.html.profiles import write_integrate_html
    from sdcompile.phases.integrate.phase import run_integrate
    from sdcompile.phases.profile.phase import GroupRaised, run_profile
    from sdcompile.phases.profile.records import record_phase
    from sdcompile.testing.model_runs import MAX_LEFT_OUT, left_out_note

    opt = ctx.options
    profiles: tuple[Path, Path] | None = (ctx.eager_profile, ctx.compile_profile)
    leave_out: tuple[str, ...] = ()
    for mode, out in (("eager", ctx.eager_profile), ("compile", ctx.compile_profile)):
        while True:
            _empty_own_folder(out)
            ctx.say(f"profiling {ctx.model_name} ({mode})")
            try:
                run_profile(opt.model, opt.model_file, mode, out, dtype=opt.dtype, repo=ctx.repo,
                            plain_cpu=opt.plain_cpu, force=True, progress=ctx.say, timeout=opt.timeout,
                            build=opt.build, leave_out=leave_out)
            except GroupRaised as failed:  # a group of the tree raises on this model: profiled without it, as
                ctx.say(failed.message)   # integrate compiles (its notes name the group and the switch)
                if failed.group and failed.group not in leave_out and len(leave_out) < MAX_LEFT_OUT:
                    leave_out += (failed.group,)
                    continue
                profiles = None
            except GateFailed as failed:  # the compiled forward fails inside the tree: layers 1 and 3 say where
                ctx.say(failed.message)
                profiles = None
            break
    eager, compiled = profiles or (None, None)
    report = run_integrate(eager, compiled, op=opt.op, model=opt.model,
                           model_file=opt.model_file, dtype=opt.dtype, repo=ctx.repo, plain_cpu=opt.plain_cpu,
                           min_cosine=opt.min_cosine, progress=ctx.say, timeout=opt.timeout, build=opt.build)
    html = ctx.run_dir / "integrate.html"
    write_integrate_html(report, html, force=True, subject=f"{ctx.model_name} / {opt.op}", links=RUN_LINKS)
    record_phase(ctx.ws.root, ctx.model_name, opt.op, "integrate", report, [html])
    summary = "; ".join(f"layer {x.number} {x.name}: {x.verdict}" for x in report.layers)
    # a target group raising on this model is the target's bug: the run goes on, naming the switch production needs
    summary += "".join(f"; {left_out_note(x)}" for x in (report.model_compile.left_out if report.model_compile else ()))
    if report.verdict == "pass":
        return Step("pass", summary)
    failing = [x for x in report.layers if x.verdict != "pass"]
    if report.verdict != "fail":  # incomplete: the pipeline asks for all three layers
        ctx.record("integrate", "fail", f"incomplete: {summary}", device=report.device,
                   evidence=[ctx.pair_dir / "integrate.json", html])
    nxt = [ctx.commands.integrate(eager, compiled, html, comment="every layer's evidence")]
    if any(x.number == 1 for x in failing) and profiles is not None:  # (a raising group: the file is named above)
        nxt.append(ctx.commands.debug(ctx.groups_to_check(), comment="why the model's sites are not replaced"))
    why = "integrate: " + "; ".join(f"layer {x.number} {x.name} {x.verdict}: {x.detail}" for x in failing)
    return Step("fail", summary, why=why, next_commands=tuple(nxt))


def _empty_own_folder(folder: Path) -> None:
    """Empty one of the run's own profile folders before it profiles into it: whatever an interrupted run left there
    (a profile cut short by an older sdcompile looks like someone else's) is not kept, and the pair's lock says no
    other command is writing there."""
    if folder.is_dir() and not folder.is_symlink():
        shutil.rmtree(folder)
    elif folder.exists() or folder.is_symlink():
        folder.unlink()


# ---------------------------------------------------------------------------------------------- 7 copy-audit
def copy_audit_step(ctx: RunContext) -> Step:
    from sdcompile.core.profiles.copies import shown_ratio
    from sdcompile.html.profiles import write_copy_audit_html
    from sdcompile.phases.copy_audit.phase import model_inputs, run_copy_audit
    from sdcompile.phases.profile.records import record_phase

    opt = ctx.options
    attention, attention_from, hits, hits_from = model_inputs(opt.model or _captured_class(opt), opt.op, ctx.ws.root,
                                                              None)
    # copy-audit's default metric (`auto`) decides count or time from the profiles and says why (gate.metric_from).
    report = run_copy_audit(ctx.eager_profile, ctx.compile_profile, attention=attention,
                            attention_from=attention_from, pattern_hits=hits, pattern_hits_from=hits_from,
                            max_inflation=opt.max_inflation)
    metric = report.gate.metric
    html = ctx.run_dir / "copy-audit.html"
    write_copy_audit_html(report, html, force=True, subject=f"{ctx.model_name} / {opt.op}", links=RUN_LINKS)
    record_phase(ctx.ws.root, ctx.model_name, opt.op, "copy-audit", report, [html])
    infl = report.inflation
    eager_n, compile_n = report.eager_copies.copy.count, report.compile_copies.copy.count
    summary = (f"copy kernels {eager_n} -> {compile_n}: {metric} inflation "
               f"{shown_ratio(report.gate.value, report.gate.undefined)} (max "
               f"{opt.max_inflation:g}; {report.gate.metric_from})"
               f", time {shown_ratio(infl.time_ratio, infl.time_undefined)}; compiled copy share "
               f"{report.compile_copies.share:.1%}; advice: "
               f"{report.recommendation.headline}")
    if report.verdict == "pass":
        return Step("pass", summary)
    # the stop line gives the gate and the advice; the full measurement stays in the phase's row
    gate = (f"copy kernels {eager_n} -> {compile_n}: {metric} inflation "
            f"{shown_ratio(report.gate.value, report.gate.undefined)} > max {opt.max_inflation:g}; advice: "
            f"{report.recommendation.headline}")
    return Step("fail", summary, why=gate, next_commands=(
        ctx.commands.copy_audit(ctx.eager_profile, ctx.compile_profile, html, comment="where the copies grew"),
        str(SdcompileCommand("explain", ("copy-elimination",), comment="the options A-D and when each applies")),
        str(SdcompileCommand("backends", comment="which backends this machine can run")),
    ))


def _captured_class(opt) -> str | None:
    """The diffusers class a --model-capture run replays (copy-audit's advice reads its attention from the class)."""
    if opt.build.capture is None:
        return None
    from sdcompile.core.zoo.models import resolve_model

    return resolve_model(None, None, opt.build).class_name
