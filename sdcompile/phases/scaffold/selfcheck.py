"""A generated source checked against the sites it came from, before anything is written.

The source is imported the way the target would import it (as `mindiesd.compilation.patterns.<module>` or
`...passes.<module>`, so its relative imports resolve in the loaded target), without being written or added
to sys.modules. A pattern group then goes through `reuse.run_groups` — the target's own PatternMatchPass,
`register_replacement` on the installed torch — on a copy of the before-freezing graph; a graph pass runs on a
copy of the after-freezing graph. Registration may trace a search function differently from how the model
graph was traced (DOMAIN.md section 2), which is why the generated pattern is judged by what it replaces in
the model's own graph, site by site, not by its source.
"""

from __future__ import annotations

import importlib.util
import sys
import types

from sdcompile.core.graph.nodes import graph_copy, op_name
from sdcompile.core.target.failures import describe_error
from sdcompile.core.target.group_runner import GroupRun, run_groups
from sdcompile.core.target.package_import import PACKAGE
from sdcompile.phases.scaffold.results import SiteCheck
from sdcompile.phases.scaffold.reuse import coverage
from sdcompile.phases.scaffold.sites import SiteGraph


def import_source(source: str, module: str, subpackage: str, origin: str) -> types.ModuleType:
    """Execute a generated source as `mindiesd.compilation.<subpackage>.<module>` of the loaded target (not kept in
    sys.modules)."""

    name = f"{PACKAGE}.compilation.{subpackage}.{module}"
    spec = importlib.util.spec_from_loader(name, loader=None, origin=origin)
    namespace = importlib.util.module_from_spec(spec)
    namespace.__file__ = origin
    # Present in sys.modules only while it executes (dataclasses look their module up there), then removed:
    # the source is not written yet and must not shadow a file of that name when the target imports it later.
    previous = sys.modules.get(name)
    sys.modules[name] = namespace
    try:
        exec(compile(source, origin, "exec"), namespace.__dict__)  # noqa: S102 - our own generated source
    finally:
        if previous is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = previous
    return namespace


def check_pattern_group(group_name: str, classes: list, sites: list[tuple[SiteGraph, str, tuple[str, ...]]],
                        dtype: str, tree_root=None) -> tuple[list[SiteCheck], GroupRun | None]:
    """Register the generated group through the target's own pass and apply it to each site's graph. `sites`
    holds each site with the pattern name generated for it and the nodes of its chain (the site's nodes minus
    edge ops left outside the pattern): a site is hit when one pattern of the group replaced every one of them."""
    checks: list[SiteCheck] = []
    runs: dict[int, GroupRun] = {}
    last = None
    for site, expected, chain_nodes in sites:
        stage = site.before_stage
        key = id(stage)
        if key not in runs:
            runs[key] = run_groups(stage.gm, [(group_name, classes)], group_name, tree_root)
        run = last = runs[key]
        cov = coverage(run, site)
        _taken, by = run.taken(site.node_names)
        # The chain may reach past the site's own nodes (an inline modulation extended up to its norm module):
        # every chain node must be gone, wherever it sits.
        gone = run.removed | {n for r in by for n in r.nodes}
        # Another pattern of the same group may take the site first (an earlier entry accepting it too); the
        # site is served either way, and `by` says by which.
        hit = set(chain_nodes) <= gone and len(cov.by) == 1
        checks.append(SiteCheck(dtype, site.path, expected, hit, cov.by, cov.left,
                                "; ".join(run.errors) or None, cov.patterns))
    return checks, last


def check_graph_pass(pass_class, sites: list[tuple[SiteGraph, str, tuple[str, ...]]],
                     dtype: str) -> tuple[list[SiteCheck], int]:
    """Run the generated custom pass on a copy of each site's after-freezing graph (see check_chain_carrier)."""

    def run(gm) -> list:
        start = len(pass_class.history)
        pass_class()(gm)
        return [r for call in pass_class.history[start:] for r in call]

    return check_chain_carrier(run, sites, dtype, after_freezing=True)


def check_chain_carrier(run, sites: list[tuple[SiteGraph, str, tuple[str, ...]]], dtype: str,
                        after_freezing: bool = False) -> tuple[list[SiteCheck], int]:
    """`run(gm)` applies a generated chain carrier (GraphPatternEntry entries in the pattern pass, or a custom pass)
    to a copy of a graph and returns what it replaced: (chain, replaced output node, holders) each. It runs once per
    captured graph the sites are in (the graph the pattern pass sees, or with `after_freezing` the graph after
    freeze()). `sites` holds each site with the chain name generated for it and the chain nodes the replacement
    must remove (a GELU module's projection is in the site, not the chain): a site is hit when one chain replaced
    its output and every such node is gone. Also returns how many chains were replaced in those graphs: more than
    the sites when the same chain also runs elsewhere (AdaLN's modulation written inline after a separate LayerNorm
    module)."""
    from collections import Counter

    checks = []
    done: dict[int, tuple[set, list, str | None]] = {}
    for site, expected, chain_nodes in sites:
        stage, nodes = (site.after_stage, site.after) if after_freezing else (site.before_stage, site.before)
        if stage is None or not nodes:
            where = "the after-freezing graph" if after_freezing else "the graph the pattern pass sees"
            checks.append(SiteCheck(dtype, site.path, expected, False, (), (), f"the site is not in {where}"))
            continue
        if id(stage) not in done:
            gm = graph_copy(stage.gm)
            names = {n.name for n in gm.graph.nodes}
            replaced, error = [], None
            try:
                replaced = run(gm)
            except Exception as exc:  # noqa: BLE001 - the generated carrier failing is the check's finding
                error = describe_error(exc)
            done[id(stage)] = (names - {n.name for n in gm.graph.nodes}, replaced, error)
        removed, replaced, error = done[id(stage)]
        names = {n.name for n in nodes}
        by = tuple(dict.fromkeys(chain for chain, out, _ in replaced if out in names))
        left = Counter(op_name(n) for n in nodes if n.name not in removed)
        hit = len(by) == 1 and set(chain_nodes) <= removed
        checks.append(SiteCheck(dtype, site.path, expected, hit, by,
                                tuple(f"{op} x{k}" if k > 1 else op for op, k in sorted(left.items())), error, by))
    return checks, sum(len(replaced) for _, replaced, _ in done.values())
