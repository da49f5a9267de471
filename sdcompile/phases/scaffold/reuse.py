"""The reuse check: the target's own pattern groups run (core/target/group_runner.py) on copies of the graph the
pattern pass sees, and what each replaced at each site. Two kinds of run:

    production   every group the target enables by default, in pattern_registry order: what compiling the
                 model with the target as it ships does at these sites
    per group    each loaded group on its own: which groups could serve the sites (a group an earlier one
                 pre-empts in production still shows here)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from sdcompile.core.graph.nodes import op_name
from sdcompile.core.target.group_runner import GroupRun
from sdcompile.phases.scaffold.results import SiteCoverage
from sdcompile.phases.scaffold.sites import SiteGraph


def coverage(run: GroupRun, site: SiteGraph, key_ops: Sequence[str] = ()) -> SiteCoverage:
    """What `run` did at `site`. With `key_ops` (the recipe's chain ops), a site counts as replaced when those
    are all gone, even if casts or views around them stay."""
    if site.problem and not site.before:
        return SiteCoverage(site.path, site.implementation, "not in the graph", 0, 0, (), ())
    if site.fused_ops:
        return SiteCoverage(site.path, site.implementation, "fused by the model", len(site.before), 0, (),
                            tuple(site.fused_ops))
    taken, by = run.taken(site.node_names)
    left_nodes = [n for n in site.before if n.name not in taken]
    left_counts = Counter(op_name(n) for n in left_nodes)
    left = tuple(f"{op} x{k}" if k > 1 else op for op, k in sorted(left_counts.items()))
    keys_gone = bool(key_ops) and all(op not in left_counts for op in key_ops if
                                     any(op_name(n) == op for n in site.before))
    if taken and (not left_nodes or keys_gone):
        status = "replaced"
    elif taken:
        status = "partly replaced"
    else:
        status = "not replaced"
    labels = tuple(dict.fromkeys(f"{r.group}: {r.pattern}" for r in by))
    groups = tuple(dict.fromkeys(r.group for r in by))
    patterns = tuple(dict.fromkeys(r.pattern for r in by))
    return SiteCoverage(site.path, site.implementation, status, len(site.before), len(taken), labels, left, groups,
                        patterns)
