"""Phase 6's last step in a run, hit is not gain: the compile profiled again without the op's groups, and the
fusion weighed between that and the run's compiled profile (`sdcompile benefit`). On an NPU a loss beyond the
threshold fails phase 6; on the emulated NPU the ledger weighs data moved (an estimate from the profiles' shapes), so
a loss there is a finding the run's verdict repeats, with the command that weighs it on an NPU."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sdcompile.core.profiles.ledger import TIME
from sdcompile.html.benefit import write_benefit_html
from sdcompile.lifecycle.context import RunContext
from sdcompile.lifecycle.run_pages import publish_page
from sdcompile.lifecycle.run_profiles import profile_into
from sdcompile.phases.benefit.phase import run_benefit
from sdcompile.phases.benefit.render import amount
from sdcompile.phases.benefit.results import BOOKKEEPING, GAINS, LOSES, NO_FUSION, BenefitReport


@dataclass(frozen=True)
class Weighed:
    """What the step adds to phase 6: its summary, and a failure or finding when the fusion does not pay."""

    summary: str
    why: str = ""  # phase 6 fails with this
    finding: str = ""  # phase 6 passes with this fact about the fusion
    command: str = ""  # the pasteable benefit command


def off_profile(ctx: RunContext) -> Path:
    return ctx.run_dir / "profiles" / "compile-without-op"


def op_groups(ctx: RunContext) -> tuple[str, ...]:
    """What this run relies on for its op: the generated group and pass, or the target's groups it reuses."""
    facts = ctx.scaffold
    passes = (facts.graph_pass_class,) if facts and facts.generated_graph_pass and facts.graph_pass_class else ()
    return (*ctx.groups_to_check(), *passes)


def profile_without_op(ctx: RunContext, raising: tuple[str, ...] = ()) -> bool:
    """The run's compile profiled without the op's groups (and the tree's groups raising on the model), once per
    run: copy-audit reads the same profile."""
    if ctx.without_op_profiled:
        return True
    names = op_groups(ctx)
    if not names:
        return False
    done, _left = profile_into(ctx, "compile", off_profile(ctx), (*raising, *names))
    ctx.without_op_profiled = done
    return done


def weigh(ctx: RunContext, raising: tuple[str, ...]) -> Weighed | None:
    """The fusion's ledger, or None when the run relies on no group to leave out or that compile fails."""
    if not profile_without_op(ctx, raising):
        return None
    opt = ctx.options
    html = ctx.run_dir / "benefit.html"

    def write_html(report) -> list[Path]:
        publish_page(ctx, html.name, lambda links: write_benefit_html(
            report, html, force=True, subject=f"{ctx.model_name} / {opt.op}", links=links))
        return [html]

    report = run_benefit(off_profile(ctx), ctx.compile_profile, op=opt.op, made=op_groups(ctx), raising=raising,
                         record_as=(ctx.model_name, opt.op), workdir=ctx.ws.root, evidence=write_html)
    command = ctx.commands.benefit(off_profile(ctx), ctx.compile_profile, comment="the fusion's ledger and causes")
    return _weighed(report, command)


def _weighed(report: BenefitReport, command: str) -> Weighed:
    ledger, m = report.ledger, report.ledger.measure
    causes = ", ".join(c.code for c in report.causes)
    because = f" ({causes})" if causes else ""
    net = f"net {amount(ledger.net, m, sign=True)} per step by {m}{because}"
    if report.verdict == GAINS or report.passed:
        return Weighed(f"benefit: {report.verdict}, {net}")
    if report.verdict == BOOKKEEPING:
        why = (f"benefit: a gain of {amount(-ledger.net, m)} per step exceeds all the step's vector work "
               f"({amount(ledger.ceiling, m)}): the two profiles launch other work")
        return Weighed(f"benefit: {report.verdict}", why=why, command=command)
    if report.verdict == NO_FUSION:
        fact = f"the compiled profile launches no {'/'.join(report.ops) or 'fused'} kernel: there is no fusion to weigh"
        return Weighed(f"benefit: {report.verdict}", finding=fact, command=command)
    assert report.verdict == LOSES
    if m == TIME:
        return Weighed(f"benefit: loses, {net}", why=f"benefit: the fusion loses, {net}", command=command)
    return Weighed(f"benefit: loses, {net}",
                   finding=f"the fusion likely loses: {net}, an estimate on CPU; weigh it on an NPU", command=command)
