"""The lifecycle's last two steps, which profile the model: integrate (phase 6: the pattern in the compiled model,
its fused kernel in the profiles, the output against eager) and copy-audit (phase 7: copy kernels, compile vs eager).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sdcompile.core.ops import op_title
from sdcompile.core.zoo.models import resolve_model
from sdcompile.lifecycle.benefit_step import Weighed, off_profile, op_groups, profile_without_op, weigh
from sdcompile.lifecycle.context import RunContext, Step
from sdcompile.lifecycle.run_pages import forget_later_pages, publish_page
from sdcompile.lifecycle.run_profiles import profile_into
from sdcompile.testing.model_runs import left_out_note
from sdcompile.util.command_line import SdcompileCommand


# ----------------------------------------------------------------------------------------------- 6 integrate
def integrate_step(ctx: RunContext) -> Step:
    from sdcompile.html.profiles import write_integrate_html
    from sdcompile.phases.integrate.phase import run_integrate

    opt = ctx.options
    profiles: tuple[Path, Path] | None = (ctx.eager_profile, ctx.compile_profile)
    leave_out: tuple[str, ...] = ()
    for mode, out in (("eager", ctx.eager_profile), ("compile", ctx.compile_profile)):
        done, leave_out = profile_into(ctx, mode, out, leave_out)
        profiles = profiles if done else None
    eager, compiled = profiles or (None, None)
    html = ctx.run_dir / "integrate.html"
    forget_later_pages(ctx)

    def write_html(report) -> list[Path]:
        publish_page(ctx, html.name, lambda links: write_integrate_html(
            report, html, force=True, subject=f"{ctx.model_name} / {opt.op}", links=links))
        return [html]

    report = run_integrate(eager, compiled, op=opt.op, model=opt.model,
                           model_file=opt.model_file, dtype=opt.dtype, repo=ctx.repo, plain_cpu=opt.plain_cpu,
                           min_cosine=opt.min_cosine, progress=ctx.say, timeout=opt.timeout, build=opt.build,
                           record_as=(ctx.model_name, opt.op), workdir=ctx.ws.root, evidence=write_html)
    summary = "; ".join(f"layer {x.number} {x.name}: {x.verdict}" for x in report.layers)
    # a target group raising on this model is the target's bug: the run goes on, naming the switch production needs
    summary += "".join(f"; {left_out_note(x)}" for x in (report.model_compile.left_out if report.model_compile else ()))
    if report.verdict == "pass":
        return _with_benefit(ctx, summary, weigh(ctx, leave_out) if profiles is not None else None, report.device,
                             html)
    failing = [x for x in report.layers if x.verdict != "pass"]
    if report.verdict != "fail":  # incomplete: the pipeline asks for all three layers
        ctx.record("integrate", "fail", f"incomplete: {summary}", device=report.device,
                   evidence=[ctx.pair_dir / "integrate.json", html])
    nxt = [ctx.commands.integrate(eager, compiled, html, comment="every layer's evidence")]
    if any(x.number == 1 for x in failing) and profiles is not None:  # (a raising group: the file is named above)
        nxt.append(ctx.commands.debug(ctx.groups_to_check(), comment="why the model's sites are not replaced"))
    why = "integrate: " + "; ".join(f"layer {x.number} {x.name} {x.verdict}: {x.detail}" for x in failing)
    return Step("fail", summary, why=why, next_commands=tuple(nxt))


def _with_benefit(ctx: RunContext, summary: str, weighed: Weighed | None, device: str, html: Path) -> Step:
    """Phase 6 passed its three layers; whether the fusion also pays decides the rest (lifecycle.benefit_step)."""
    if weighed is None:
        return Step("pass", summary)
    summary = f"{summary}; {weighed.summary}"
    if weighed.why:  # the phase's record says so too: integrate recorded its three layers' pass
        ctx.record("integrate", "fail", summary, device=device,
                   evidence=[ctx.pair_dir / "integrate.json", ctx.pair_dir / "benefit.json", html])
        return Step("fail", summary, why=weighed.why, next_commands=(weighed.command,))
    return Step("pass", summary, finding=weighed.finding, next_commands=(weighed.command,) if weighed.finding else ())


# ---------------------------------------------------------------------------------------------- 7 copy-audit
def copy_audit_step(ctx: RunContext) -> Step:
    from sdcompile.core.profiles.copies import shown_ratio
    from sdcompile.html.profiles import write_copy_audit_html
    from sdcompile.phases.copy_audit.phase import model_inputs, run_copy_audit
    from sdcompile.phases.copy_audit.render import advice_headline

    opt = ctx.options
    attention, attention_from, hits, hits_from = model_inputs(opt.model or _captured_class(opt), opt.op, ctx.ws.root,
                                                              None)
    # copy-audit's default metric (`auto`) decides count or time from the profiles and says why (gate.metric_from).
    html = ctx.run_dir / "copy-audit.html"

    def write_html(report) -> list[Path]:
        publish_page(ctx, html.name, lambda links: write_copy_audit_html(
            report, html, force=True, subject=f"{ctx.model_name} / {opt.op}", links=links))
        return [html]

    report = run_copy_audit(ctx.eager_profile, ctx.compile_profile, attention=attention,
                            attention_from=attention_from, pattern_hits=hits, pattern_hits_from=hits_from,
                            max_inflation=opt.max_inflation, repo=ctx.tree.root, record_as=(ctx.model_name, opt.op),
                            workdir=ctx.ws.root, evidence=write_html)
    metric = report.gate.metric
    infl = report.inflation
    eager_n, compile_n = report.eager_copies.copy.count, report.compile_copies.copy.count
    summary = (f"copy kernels {eager_n} -> {compile_n}: {metric} inflation "
               f"{shown_ratio(report.gate.value, report.gate.undefined)} (max "
               f"{opt.max_inflation:g}; {report.gate.metric_from})"
               f", time {shown_ratio(infl.time_ratio, infl.time_undefined)}; compiled copy share "
               f"{report.compile_copies.share:.1%}; advice: "
               f"{advice_headline(report.recommendation)}")
    if report.verdict == "pass":
        return Step("pass", summary)
    own = _the_compiles_own(ctx, report, audit_args=dict(attention=attention, attention_from=attention_from,
                                                         pattern_hits=hits, pattern_hits_from=hits_from,
                                                         max_inflation=opt.max_inflation))
    if own is not None and own.adds_none:  # no advice on the op's patterns: they are not where the copies come from
        return _the_compiles_own_step(ctx, report, html, own.text(), f"with or without the {opt.op} groups")
    if own is None and ctx.scaffold is not None and ctx.scaffold.fused_by_model:
        # nothing of this run's to leave out: the compile it profiled is the compile without any group for the op
        why = (f"the model calls the fused {op_title(opt.op)} itself and this run adds no group for it: the "
               "inflation is the compile's own")
        return _the_compiles_own_step(ctx, report, html, why, f"with no {opt.op} group of this run's")
    if own is not None:
        summary = f"{summary}; {own.text()}"
    # the stop line gives the gate and the advice; the full measurement stays in the phase's row
    gate = (f"copy kernels {eager_n} -> {compile_n}: {metric} inflation "
            f"{shown_ratio(report.gate.value, report.gate.undefined)} > max {opt.max_inflation:g}; advice: "
            f"{advice_headline(report.recommendation)}")
    return Step("fail", summary, why=gate, next_commands=(
        ctx.commands.copy_audit(ctx.eager_profile, ctx.compile_profile, html, comment="where the copies grew"),
        str(SdcompileCommand("explain", ("copy-elimination",), comment="the remedies A-C and when each applies")),
        str(SdcompileCommand("backends", comment="which backends this machine can run")),
    ))


def _the_compiles_own_step(ctx: RunContext, report, html: Path, why: str, holds: str) -> Step:
    """Phase 7 above its limit with copies that are not the run's fusion's (`why` says how that is known, `holds`
    for which compiles): a pass with the inflation kept as a finding."""
    from sdcompile.core.profiles.copies import shown_ratio

    opt, infl = ctx.options, report.inflation
    eager_n, compile_n = report.eager_copies.copy.count, report.compile_copies.copy.count
    grew = ", ".join(f"{g.name} +{g.compile_count - g.eager_count}" for g in infl.grew_most[:3]
                     if g.compile_count > g.eager_count)
    ratio = shown_ratio(report.gate.value, report.gate.undefined)
    return Step("pass", f"copy kernels {eager_n} -> {compile_n}: {report.gate.metric} inflation {ratio} > max "
                        f"{opt.max_inflation:g}, {why}" + (f" (grew most: {grew})" if grew else ""),
                finding=f"the compile's own copy inflation stays: copy kernels {eager_n} -> {compile_n} ({ratio}) "
                        + holds,
                next_commands=(ctx.commands.copy_audit(ctx.eager_profile, ctx.compile_profile, html,
                                                       comment="where the compile's copies come from"),
                               str(SdcompileCommand("explain", ("copy-elimination",),
                                                    comment="the remedies A-C and when each applies"))))


@dataclass(frozen=True)
class OwnCopies:
    """The copies of the same compile without the run's groups for the op, beside those with them."""

    op: str
    groups: tuple[str, ...]  # what was left out: the groups (or pass) the run relies on for the op
    by_count: bool  # the gate's metric: counts (CPU captures) or time (us, an NPU)
    with_op: float
    without_op: float

    @property
    def adds_none(self) -> bool:
        """The op's groups add no copies: counts are exact; copy time on an NPU varies run to run (TIME_TOLERANCE)."""
        return self.with_op <= self.without_op * (1.0 if self.by_count else TIME_TOLERANCE)

    def text(self) -> str:
        unit, shown = ("copy kernels", "{:g}") if self.by_count else ("us of copy kernels", "{:,.1f}")
        return (f"without this run's {self.op} groups ({', '.join(self.groups)}) the compile has "
                f"{shown.format(self.without_op)} {unit}, with them {shown.format(self.with_op)}: "
                + ("the inflation is the compile's own, not theirs" if self.adds_none else "they add copies"))


TIME_TOLERANCE = 1.05


def _the_compiles_own(ctx: RunContext, report, audit_args: dict) -> OwnCopies | None:
    """Above the gate, whether the excess is the compile's own: the same compile without the groups (or the pass)
    this run relies on for the op (profiled once per run, phase 6 may have), counted again. None when the run relies
    on none (nothing to leave out) or that compile fails."""
    from sdcompile.phases.copy_audit.phase import run_copy_audit

    if not profile_without_op(ctx):
        return None
    names = op_groups(ctx)
    without = run_copy_audit(ctx.eager_profile, off_profile(ctx), **audit_args)
    if report.gate.metric == "count":
        return OwnCopies(ctx.options.op, names, True, report.compile_copies.copy.count,
                         without.compile_copies.copy.count)
    return OwnCopies(ctx.options.op, names, False, report.compile_copies.copy.us, without.compile_copies.copy.us)


def _captured_class(opt) -> str | None:
    """The diffusers class a --model-capture run replays (copy-audit's advice reads its attention from the class)."""
    if opt.build.capture is None:
        return None

    return resolve_model(None, None, opt.build).class_name
