"""`sdcompile copy-audit` (phase 7): copy kernels eager vs compile, their inflation and where it comes from, and
the remedies (A fix the patterns, B VAE eager, C ACLGraph), offered as the target's CompilationConfig allows.
`--max-inflation` makes it a CI gate."""

from __future__ import annotations

from pathlib import Path

from sdcompile.core.environment import collect_versions
from sdcompile.core.profiles.advice import DEFAULT_INFLATION, DEFAULT_SHARE, AdviceInputs, Thresholds, recommend
from sdcompile.core.profiles.catalog import load_catalog
from sdcompile.core.profiles.compile_log import read_log
from sdcompile.core.profiles.copies import copy_breakdown, inflation
from sdcompile.core.profiles.notes import comparability_notes
from sdcompile.core.profiles.profile import (
    NPU_PROFILE,
    UNKNOWN_SOURCE,
    Profile,
    load_profile,
    summarize,
)
from sdcompile.core.target.config_fields import target_config
from sdcompile.core.zoo.models import resolve_model
from sdcompile.phases.choices import ATTENTION, INFLATION_METRICS
from sdcompile.phases.copy_audit.results import CopyAuditReport, Gate
from sdcompile.phases.pair_scope import holds_pair, recorded_pair
from sdcompile.phases.records import Evidence, record_phase
from sdcompile.testing.model_runs import attention_of
from sdcompile.util.choices import UnknownChoice
from sdcompile.util.errors import BadInput
from sdcompile.util.input_checks import reading, writable_dir
from sdcompile.workspace.artifacts import read_artifact
from sdcompile.workspace.store import Workspace

METRICS = INFLATION_METRICS


def model_inputs(model: str | None, op: str | None, workdir: Path | None, attention: str | None
                 ) -> tuple[str | None, str, int | None, str]:
    """Advice inputs a --model gives: attention from the diffusers class name (unless --attn), and the pattern hits
    `integrate` recorded for (model, op) in the workspace."""
    if not model:
        return attention, "--attn", None, ""

    spec = resolve_model(model)
    attention_from = "--attn"
    class_name = spec.zoo.class_name if spec.zoo is not None else spec.class_name
    if attention is None and class_name is not None:
        attention = attention_of(class_name)
        attention_from = f"--model {spec.model_option} (class {class_name})"
    hits, hits_from = None, ""
    if op:
        from sdcompile.workspace.store import resolve_workdir

        writable_dir(workdir or resolve_workdir(), "--workdir")  # the verdict is recorded there after the audit
        op_name = load_catalog().resolve_op(op).name
        artifact = Workspace(workdir).pair_dir(spec.name, op_name, create=False) / "integrate.json"
        if artifact.is_file():
            doc = read_artifact("integrate", artifact)
            if doc.get("model_compile"):
                hits = doc["model_compile"]["replacements"]
            elif doc.get("log") and doc["log"]["hits"]["lines"]:
                hits = doc["log"]["hits"]["total"]
            hits_from = f"integrate record {artifact}" if hits is not None else ""
    return attention, attention_from, hits, hits_from


def resolve_metric(metric: str, eager: Profile, compiled: Profile) -> tuple[str, str]:
    """`auto` compares copy time on NPU profiles and copy counts when a side is a CPU capture: a CPU capture's
    durations are CPU times of few-microsecond ops that swing with the machine's load (one run can double them),
    while the number of copy kernels is fixed by what the compile produced."""
    if metric != "auto":
        return metric, "--inflation-metric"
    sides = (("eager", eager), ("compile", compiled))
    unknown = [side for side, p in sides if p.source == UNKNOWN_SOURCE]
    if unknown:
        which = "both profiles are" if len(unknown) == 2 else f"the {unknown[0]} profile is"
        return "count", (f"auto: {which} of unknown source (a bare CSV whose data names no NPU core), so its "
                         "durations may be CPU times")
    cpu = [side for side, p in sides if p.source != NPU_PROFILE]
    if not cpu:
        return "time", "auto: NPU profiles"
    which = "both profiles are" if len(cpu) == 2 else f"the {cpu[0]} profile is"
    return "count", f"auto: {which} CPU captures, whose durations are CPU times"


@holds_pair(recorded_pair)
def run_copy_audit(eager: Path, compiled: Path, *, attention: str | None = None, attention_from: str = "--attn",
                   log: Path | None = None, pattern_hits: int | None = None, pattern_hits_from: str = "",
                   max_inflation: float | None = None, metric: str = "auto",
                   inflation_threshold: float = DEFAULT_INFLATION, share_threshold: float = DEFAULT_SHARE,
                   step: int | None = None, catalog_file: Path | None = None, session: tuple[str, ...] = (),
                   rank: int | None = None, repo: Path | str | None = None, record_as: tuple[str, str] | None = None,
                   workdir: Path | None = None, evidence: Evidence | None = None) -> CopyAuditReport:
    """The audit of the two profiles. `evidence(report)` writes the caller's reports of it (an HTML page) and returns
    their paths; with `record_as` (model, op) the verdict and that evidence are recorded in the pair of `workdir`'s
    workspace, under the pair's lock from start to record."""
    report = _audit(eager, compiled, attention, attention_from, log, pattern_hits, pattern_hits_from, max_inflation,
                    metric, inflation_threshold, share_threshold, step, catalog_file, session, rank, repo)
    written = list(evidence(report)) if evidence is not None else []
    if record_as is not None:
        record_phase(workdir, *record_as, "copy-audit", report, written)
    return report


def _audit(eager, compiled, attention, attention_from, log, pattern_hits, pattern_hits_from, max_inflation, metric,
           inflation_threshold, share_threshold, step, catalog_file, session, rank, repo) -> CopyAuditReport:

    if metric not in METRICS:
        raise UnknownChoice("--inflation-metric", metric, METRICS,
                            message=f"--inflation-metric {metric!r} is not one of {', '.join(METRICS)}")
    if attention is not None and attention not in ATTENTION:
        raise UnknownChoice("--attn", attention, ATTENTION, message=f"--attn {attention!r} is not one of "
                            f"{', '.join(ATTENTION)}", hint=": 2d for image models (Flux, SD3, Qwen-Image), 3d for "
                            "video models (Wan, HunyuanVideo)")
    for name, value in (("--max-inflation", max_inflation), ("--inflation-threshold", inflation_threshold),
                        ("--share-threshold", share_threshold)):
        if value is not None and value < 0:
            raise BadInput(f"{name} must not be negative (got {value})", "pass a ratio such as 1.5")
    with reading(catalog_file, "--catalog"):
        catalog = load_catalog(catalog_file)
    eager_p = load_profile(eager, catalog, step, rows=True, session=session, rank=rank, what="EAGER", qualifiers=False)
    compiled_p = load_profile(compiled, catalog, step, rows=True, session=session, rank=rank, what="COMPILE",
                              qualifiers=False)
    eb, cb = copy_breakdown(eager_p, catalog), copy_breakdown(compiled_p, catalog)
    infl = inflation(eager_p, compiled_p, eb, cb, catalog)
    metric, metric_from = resolve_metric(metric, eager_p, compiled_p)

    if log is not None:
        with reading(log, "--log"):
            parsed = read_log(log)
        if parsed.hits.lines:
            pattern_hits, pattern_hits_from = parsed.hits.total, f"--log {log}"
        else:
            pattern_hits_from = f"--log {log} has no PatternMatchPass lines"
    inputs = AdviceInputs(
        attention=attention or "unknown",
        attention_from=attention_from if attention else "not given (--attn 2d|3d or --model)",
        pattern_hits=pattern_hits,
        pattern_hits_from=pattern_hits_from or "not given (--log)",
        copy_share=cb.share,
        eager_copy_share=eb.share,
        npu_times=all(p.source == NPU_PROFILE for p in (eager_p, compiled_p)),
        time_inflation=infl.time_ratio,
        count_inflation=infl.count_ratio,
        time_undefined=infl.time_undefined,
        count_undefined=infl.count_undefined,
    )
    # The recommendation weighs the same ratio the gate does, so the two never disagree on one profile pair.
    advice = recommend(inputs, Thresholds(inflation_threshold, share_threshold, metric), target_config(repo))
    value = infl.time_ratio if metric == "time" else infl.count_ratio
    undefined = infl.time_undefined if metric == "time" else infl.count_undefined
    if max_inflation is None:
        gate, verdict = Gate(None, metric, value, "not set", metric_from, undefined), "info"
    else:
        verdict = "pass" if value <= max_inflation else "fail"
        gate = Gate(max_inflation, metric, value, verdict, metric_from, undefined)
    return CopyAuditReport(
        device=compiled_p.device, verdict=verdict, eager=summarize(eager_p), compiled=summarize(compiled_p),
        eager_copies=eb, compile_copies=cb, inflation=infl, gate=gate, recommendation=advice,
        catalog=catalog.sources, notes=comparability_notes(eager_p, compiled_p, ordered=True),
        versions=collect_versions(),
    )
