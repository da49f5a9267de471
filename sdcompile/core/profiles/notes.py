"""Why the totals of two profiles may not compare one to one: ranks, sessions, steps, sources, profiler levels,
untyped rows, row order. Each note is one sentence a report prints beside its tables."""

from __future__ import annotations

from sdcompile.core.profiles.profile import NPU_PROFILE, UNKNOWN_SOURCE, Profile
from sdcompile.core.profiles.read import EXACT

# More than this share of rows with Type N/A means the profile was taken at Level0 (or its Types were dropped).
MOSTLY_UNTYPED = 0.5


def levels(profile: Profile) -> tuple[str, ...]:
    """The profiler levels a side's profiler_info records, else "Level0" when most Types are N/A."""
    recorded = {r.level for r in profile.ranks if r.level}
    if recorded:
        return tuple(sorted(recorded))
    untyped = sum(r.missing_types for r in profile.ranks)
    return ("Level0",) if profile.rows and untyped / profile.rows > MOSTLY_UNTYPED else ()


def comparability_notes(eager: Profile, compiled: Profile, *, ordered: bool = False,
                        labels: tuple[str, str] = ("eager", "compile")) -> tuple[str, ...]:
    """`ordered`: the command orders rows (copy-audit's per-layer segments), so say when it cannot. `labels` name the
    two sides as the command does (benefit's off and on)."""
    a, b = labels
    notes = []
    if len(eager.ranks) != len(compiled.ranks):
        notes.append(f"rank counts differ: {a} {len(eager.ranks)}, {b} {len(compiled.ranks)} — totals are sums "
                     "over ranks")
    if eager.step is None and len(eager.steps) != len(compiled.steps):
        notes.append(f"step counts differ: {a} {len(eager.steps)}, {b} {len(compiled.steps)} — pick one with "
                     "--step N")
    if eager.source != compiled.source:
        notes.append(f"the sides come from different sources: {a} {eager.source}, {b} {compiled.source}")
    le, lc = levels(eager), levels(compiled)
    if le and lc and le != lc:
        notes.append(f"warning: the sides are at different profiler levels: {a} {'/'.join(le)}, {b} "
                     f"{'/'.join(lc)} — Level0 rows carry no Type, so their op types come from kernel names (the "
                     "catalog's name rules) and by-type rows may not line up")
    for side, p in ((a, eager), (b, compiled)):
        notes += _side_notes(side, p, ordered)
    return tuple(notes)


def _side_notes(side: str, p: Profile, ordered: bool) -> list[str]:
    notes = []
    if p.missing:
        shown = ", ".join(m.path for m in p.missing[:6]) + (" ..." if len(p.missing) > 6 else "")
        notes.append(f"warning: {side}: {len(p.missing)} run folder(s) hold no kernel_details.csv and are left out of "
                     f"the totals: {shown}")
    if p.left_out:
        shown = ", ".join(f"{x.session or x.path} (rank {x.rank_id if x.rank_id is not None else '?'}, {x.why})"
                          for x in p.left_out[:6])
        notes.append(f"{side}: {len(p.left_out)} session(s) not read: {shown}")
    sliced = [r for r in p.ranks if r.files > 1]
    if sliced:
        notes.append(f"{side}: " + ", ".join(f"{r.label} read from {r.files} msprof slices" for r in sliced))
    if p.source == UNKNOWN_SOURCE:
        notes.append(f"warning: {side}: source unknown — no profiler_info, no capture info, and no Accelerator Core "
                     "cells naming an NPU core: durations may be CPU times, so `auto` compares copy counts")
    elif p.source != NPU_PROFILE:
        notes.append(f"{side} is a {p.source}: durations are CPU times and Type is the op type an NPU launch of "
                     "each ATen op would report (catalog mapping), not NPU measurements")
    missing = sum(r.missing_durations for r in p.ranks)
    if missing:
        notes.append(f"{side}: {missing} row(s) with Duration(us) N/A counted as 0 us")
    untyped = sum(r.missing_types for r in p.ranks)
    if untyped:
        most = " (most rows: a Level0 profile)" if p.rows and untyped / p.rows > MOSTLY_UNTYPED else ""
        notes.append(f"{side}: {untyped} row(s) with Type N/A or absent{most}: op type taken from the kernel Name "
                     "by the catalog's name rules")
    na_steps = sum(r.na_step_rows for r in p.ranks)
    if na_steps:
        where = ("left out by --step" if p.step is not None
                 else "counted in the totals but in no row of the per-step table")
        notes.append(f"{side}: {na_steps} row(s) with Step Id N/A, {where}")
    unordered = [r for r in p.ranks if r.ordering != EXACT]
    if ordered and unordered:
        why = sorted({r.ordering for r in unordered})
        notes.append(f"warning: {side}: rows kept in file order ({', '.join(why)}) for "
                     f"{', '.join(r.label for r in unordered[:4])}{' ...' if len(unordered) > 4 else ''}: per-layer "
                     "segments assume the file lists kernels in launch order")
    return notes
