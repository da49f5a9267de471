"""`sdcompile benefit` (phase 6, its last step): a fusion that hit may still gain nothing. Two profiles of one
model, the fusion off and on (or eager and compiled), give the ledger: the kernels that vanished, those that
appeared, the net, and the region's ceiling (`core.profiles.ledger`); every copy, cast or move the fusion brought is
placed by its neighbours and mapped to a cause R1-R5 (`core.profiles.side_effects`).

With `--model` the two sides are made here: the model compiled through the target without the op's groups (off)
and with them (on), the groups being `--leave-out`'s or the ones the pair's scaffold record relies on.
"""

from __future__ import annotations

import math
from pathlib import Path

from sdcompile.core.environment import collect_versions
from sdcompile.core.profiles.catalog import FusedOp, KernelCatalog, load_catalog
from sdcompile.core.profiles.graph_sites import fused_calls_added
from sdcompile.core.profiles.ledger import Ledger, build_ledger
from sdcompile.core.profiles.notes import comparability_notes
from sdcompile.core.profiles.profile import Profile, load_profile, summarize
from sdcompile.core.profiles.side_effects import STREAM, causes, fallback_prints, fused_sites, place_side_effects
from sdcompile.phases.benefit.results import (
    BOOKKEEPING,
    DEFAULT_MAX_REGRESSION,
    GAINS,
    HITS_CAPTURED,
    HITS_OPTION,
    LOSES,
    NO_FUSION,
    WITHIN,
    BenefitReport,
)
from sdcompile.phases.pair_scope import holds_pair, recorded_pair
from sdcompile.phases.profile.phase import profile_leaving_out_raising
from sdcompile.phases.records import Evidence
from sdcompile.util.errors import BadInput, GateFailed
from sdcompile.util.input_checks import reading
from sdcompile.workspace.artifacts import write_artifact
from sdcompile.workspace.store import Workspace


@holds_pair(recorded_pair)
def run_benefit(off: Path | None, on: Path | None, *, op: str | None = None, step: int | None = None,
                catalog_file: Path | None = None, session: tuple[str, ...] = (), rank: int | None = None,
                hits: float | None = None, log: Path | None = None,
                max_regression: float = DEFAULT_MAX_REGRESSION,
                made: tuple[str, ...] = (), raising: tuple[str, ...] = (), record_as: tuple[str, str] | None = None,
                workdir: Path | None = None, evidence: Evidence | None = None) -> BenefitReport:
    """Weigh the fusion between the `off` and `on` profile folders. `made` names the groups the off side was
    compiled without when sdcompile made the two sides (`profile_sides`); with `record_as` (model, op) the report
    is kept as the pair's benefit.json in `workdir`'s workspace."""
    if off is None or on is None:
        raise BadInput("benefit needs two profiles, OFF and ON, or --model to make them",
                       "pass the profile with the fusion off and the one with it on, or --model M --op O")
    if not 0 <= max_regression < math.inf:
        raise BadInput(f"--max-regression {max_regression:g} is not a percentage", "give one of the step, e.g. 3")
    with reading(catalog_file, "--catalog"):
        catalog = load_catalog(catalog_file)
    fused_op = catalog.resolve_op(op) if op else None
    with reading(log, "--log"):
        lines = fallback_prints(log) if log else ()
    # rows in start-time order, each with its stream: side effects are placed among their own stream's neighbours
    columns = frozenset({STREAM})
    off_p = load_profile(off, catalog, step, rows=True, extra_columns=columns, session=session, rank=rank, what="OFF")
    on_p = load_profile(on, catalog, step, rows=True, extra_columns=columns, session=session, rank=rank, what="ON")
    report = weigh(off_p, on_p, catalog, fused_op, hits, HITS_OPTION if hits is not None else "", lines,
                   max_regression, made, raising)
    if evidence is not None:
        evidence(report)
    if record_as is not None:  # phase 6's last step: its record sits beside integrate.json, the phase's verdict
        write_artifact("benefit", Workspace(workdir).pair_dir(*record_as) / "benefit.json", report)
    return report


def weigh(off: Profile, on: Profile, catalog: KernelCatalog, op: FusedOp | None, hits: float | None, hits_from: str,
          fallback_lines: tuple[str, ...], max_regression: float, made: tuple[str, ...] = (),
          raising: tuple[str, ...] = ()) -> BenefitReport:
    ops = (op,) if op else _grown_ops(off, on, catalog)
    ledger = build_ledger(off, on, catalog, ops)
    effects = place_side_effects(ledger, off, on, catalog)
    fused = tuple(t for o in ops for t in o.fused_types)
    if hits is None:  # the fused calls sdcompile's compiled graphs made, when it profiled both sides
        hits = fused_calls_added([t.rank for t in off.tables], [t.rank for t in on.tables], fused)
        hits_from = HITS_CAPTURED if hits is not None else ""
    found = causes(ledger, effects, hits, fallback_lines)
    notes = list(comparability_notes(off, on, labels=("off", "on")))
    launched = (_launches(off, fused), _launches(on, fused))
    if launched[1] and launched[0] >= launched[1]:
        notes.append(f"the off side launches the fused kernel as often ({launched[0]} vs {launched[1]} launches): "
                     "without the left-out groups another group fuses the same sites, so the ledger weighs what the "
                     "two groups do differently")
    if effects and all(not e.launches for e in effects):
        notes.append("the ON profile's start times cannot order its rows: its side effects are listed, not placed")
    return BenefitReport(
        ops=tuple(o.name for o in ops), device=on.device, verdict=_verdict(ledger, launched[1], max_regression),
        ledger=ledger, side_effects=effects, fused_sites=fused_sites(ledger, off, on, catalog), causes=found,
        hits=hits, hits_from=hits_from,
        max_regression=max_regression, off=summarize(off), on=summarize(on), left_out=made, raising=raising,
        catalog=catalog.sources, notes=tuple(notes), versions=collect_versions(None),
    )


def _launches(profile: Profile, types: tuple[str, ...]) -> int:
    return sum(g.count for g in profile.groups if g.op_type in types)


def _grown_ops(off: Profile, on: Profile, catalog: KernelCatalog) -> tuple[FusedOp, ...]:
    """Without --op: the catalog's fused ops whose fused kernels are launched more often with the fusion on."""
    return tuple(o for o in catalog.ops.values() if _launches(on, o.fused_types) > _launches(off, o.fused_types))


def _verdict(ledger: Ledger, fused_on: int, max_regression: float) -> str:
    if not fused_on:  # the on side launches no fused kernel of the ops weighed: there is no fusion to weigh
        return NO_FUSION
    if ledger.over_ceiling:
        return BOOKKEEPING
    if ledger.net <= 0:
        return GAINS
    return WITHIN if ledger.net <= ledger.step_total * max_regression / 100 else LOSES


def profile_sides(model: str | None, model_file: str | None, op: str, out: Path, *, leave_out: tuple[str, ...] = (),
                  groups_from: tuple[str, ...] = (), dtype: str = "bf16", repo: Path | None = None,
                  plain_cpu: bool = False, progress=lambda _: None, timeout: float | None = None,
                  build=None) -> tuple[Path, Path, tuple[str, ...], tuple[str, ...]]:
    """Profile the model compiled with the op's groups (`out/on`) and without them (`out/off`), as the recipe's
    off/on comparison does; the groups are `leave_out`, else `groups_from` (the pair's scaffold record). With
    neither the off side is the eager model: the ledger then weighs the whole compile. A tree group that raises on
    this model is left out of both sides (integrate names it with its switch). Returns (off, on, the op's groups
    left out of the off side, the raising groups left out of both)."""
    groups = leave_out or groups_from
    off, on = out / "off", out / "on"
    common = dict(dtype=dtype, repo=repo, plain_cpu=plain_cpu, force=True, timeout=timeout, build=build)
    progress(f"profiling the {op} fusion on")
    done, raising = profile_leaving_out_raising(model, model_file, "compile", on, (), progress, **common)
    if not done:
        raise GateFailed(f"the model does not compile through the target with the {op} fusion on",
                         "run `sdcompile integrate --model ... --op ...`: its layers say where the compile fails")
    progress(f"profiling the {op} fusion off ({'without ' + ', '.join(groups) if groups else 'eager'})")
    done, _ = profile_leaving_out_raising(model, model_file, "compile" if groups else "eager", off,
                                          (*raising, *groups) if groups else (), progress, **common)
    if not done:
        raise GateFailed(f"the model does not compile through the target without {', '.join(groups)}",
                         "weigh two profiles of your own: sdcompile benefit OFF ON --op ...")
    return off, on, groups, raising
