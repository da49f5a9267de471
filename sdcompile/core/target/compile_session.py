"""One compile run of the target's own MindieSDBackend with only the selected pattern groups enabled.

A session resets what upstream keeps per process (the activate-once flag, the module-level PatternMatchPass,
dynamo's caches, the inductor counters), restricts `CompilationConfig.fusion_patterns` to the selection,
captures MindIE-SD's log, and records the graphs around the pattern pass and which pattern made each
replacement, so runs never leak into each other.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import logging
from collections import Counter
from typing import TYPE_CHECKING

from sdcompile.core.target.failures import describe_error
from sdcompile.core.target.graph_nodes import FinalGraph, final_graph
from sdcompile.core.target.graph_snapshots import GraphSnapshot, PassCapture, snapshot
from sdcompile.core.target.kernel_sites import check_graph
from sdcompile.core.target.pass_log import REPLACE_LINE
from sdcompile.core.target.pattern_exprs import RegisteredPattern, pattern_anchor_targets, pattern_op_targets
from sdcompile.core.target.pattern_groups import GroupLoad
from sdcompile.core.target.replacements import Replacement, observe
from sdcompile.core.torchcompat import dynamo
from sdcompile.core.torchcompat.dynamo import counters
from sdcompile.core.torchcompat.pattern_matcher import pretty

if TYPE_CHECKING:
    from sdcompile.core.target.loader import LoadedTarget

LOGGER_NAME = "mindie-sd"


def reset_compile_state(target: LoadedTarget) -> None:
    """Forget every pattern registration and compiled graph of earlier runs in this process."""

    target.module("passes").once_flag.clear()
    # mindie_sd_backend imported `patterns` by name, so the object is reset in place, never replaced.
    target.module("passes.register_pattern_to_pass").patterns.__init__()
    dynamo.reset()
    dynamo.counters().clear()



class CompileSession:
    """One compile run with only `groups` enabled (a context manager; see the module docstring)."""

    def __init__(self, target: LoadedTarget, groups: list[GroupLoad]):
        self.target = target
        self.groups = groups
        self.graphs: list[PassCapture] = []
        # The graph each compile ends with, after freeze() and graph_rewrite_after_freezing (custom graph passes
        # included): what actually runs.
        self.final_graphs: list[GraphSnapshot] = []
        self.log: list[logging.LogRecord] = []
        self.registration_errors: dict[str, str] = {}  # pattern name -> error
        self.hits_by_pattern: Counter = Counter()  # pattern name -> replacements it applied in this session
        self.applications: list[Replacement] = []
        # Every fused-op call of the final graphs, judged as the NPU runs it (kernel_sites.py)
        self.kernel_sites: list = []
        # The same final graphs as nodes in run order (profile rows map back to them), and the fused calls their
        # runs made: counted as the compiled regions are called, so a graph compiled twice counts once per run
        self.final_nodes: list[FinalGraph] = []
        self.fused_calls_run: Counter = Counter()  # fused op -> calls made by the compiled regions run so far
        self._kernel_cache: dict = {}
        self._entries_by_pattern: dict[str, list] = {}
        self._saved_config = None
        self._handler: logging.Handler | None = None
        self._logger_state = None
        self._probes = contextlib.ExitStack()

    # -- lifecycle
    def __enter__(self) -> CompileSession:
        if not self.target._session_lock.acquire(blocking=False):
            raise RuntimeError("another CompileSession on this target is still open")
        try:
            reset_compile_state(self.target)
            self._probes.enter_context(dynamo.no_unlogged_probes())  # what a capture skips: logs nobody reads
            self._restrict_config()
            self._attach_log()
            self._observe_registration()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc_info) -> None:
        try:
            rpp = self.target.module("passes.register_pattern_to_pass")
            rpp.patterns.__dict__.pop("register_pattern", None)
            if self._saved_config is not None:
                self.target.module("compiliation_config").CompilationConfig.fusion_patterns = self._saved_config
                self._saved_config = None
            self._detach_log()
            self._probes.close()
        finally:
            if self.target._session_lock.locked():
                self.target._session_lock.release()

    def _restrict_config(self) -> None:
        config_module = self.target.module("compiliation_config")
        fusion = config_module.FusionPatterns
        selected = {g.flag for g in self.groups if g.flag}
        self._saved_config = config_module.CompilationConfig.fusion_patterns
        values = {f.name: f.name in selected for f in dataclasses.fields(fusion)}
        config_module.CompilationConfig.fusion_patterns = fusion(**values)

    def _attach_log(self) -> None:
        logger = logging.getLogger(LOGGER_NAME)
        session = self

        class _Capture(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                session.log.append(record)

        self._logger_state = (logger.level, logger.disabled)
        self._handler = _Capture(level=logging.DEBUG)
        logger.addHandler(self._handler)
        logger.setLevel(logging.DEBUG)  # the replace count is logged at DEBUG
        logger.disabled = False

    def _detach_log(self) -> None:
        logger = logging.getLogger(LOGGER_NAME)
        if self._handler is not None:
            logger.removeHandler(self._handler)
            self._handler = None
        if self._logger_state is not None:
            logger.setLevel(self._logger_state[0])
            logger.disabled = self._logger_state[1]
            self._logger_state = None

    def _observe_registration(self) -> None:
        """Attribute each registered pattern entry to the PatternBase.name() that produced it."""
        patterns = self.target.module("passes.register_pattern_to_pass").patterns
        original = type(patterns).register_pattern
        session = self

        def register_pattern(name, pattern, replacement, example_inputs):
            before = {id(e) for entries in patterns.pattern_pass.patterns.values() for e in entries}
            try:
                return original(patterns, name, pattern, replacement, example_inputs)
            except Exception as exc:
                session.registration_errors[name] = describe_error(exc, session.target.tree.root)
                raise
            finally:
                added = [e for entries in patterns.pattern_pass.patterns.values() for e in entries
                         if id(e) not in before]
                session._entries_by_pattern[name] = added
                for entry in added:
                    session._count_applications(entry, name)

        patterns.register_pattern = register_pattern  # an instance attribute; removed again on exit

    def _count_applications(self, entry, name: str) -> None:
        """Count which pattern applied each replacement (inductor's counter only has the total)."""
        hits, applications = self.hits_by_pattern, self.applications

        def record(replacement: Replacement) -> None:
            hits[name] += 1
            applications.append(replacement)

        observe(entry, self._group_of(name), name, record)

    def _group_of(self, pattern: str) -> str:
        return next((g.group for g in self.groups if pattern in g.patterns), "")

    # -- what to compile with
    def activate(self) -> None:
        """Register the selected groups now (the backend would do it on first compile). Raises what upstream
        raises; unregistered-but-exported groups are registered directly after the registry's own."""
        passes = self.target.module("passes")
        passes.activate_pattern_once()
        rpp = self.target.module("passes.register_pattern_to_pass")
        self._attribute_graph_entries(rpp.patterns.pattern_pass)
        for g in self.groups:
            if g.flag is None and not self._registered_any(g):
                rpp.register_pattern_to_pass(getattr(self.target.module("patterns"), g.group))

    def _attribute_graph_entries(self, pattern_pass) -> None:
        """Entries a GraphPatternEntry carrier registered itself (not through register_pattern), each known by its
        handler's name: their replacements are counted like a pattern's."""
        known = {id(e) for entries in self._entries_by_pattern.values() for e in entries}
        for entries in list(pattern_pass.patterns.values()):
            for entry in entries:
                handler = getattr(entry, "handler", None)
                if id(entry) in known or handler is None:
                    continue
                name = getattr(handler, "__name__", type(handler).__name__)
                self._entries_by_pattern.setdefault(name, []).append(entry)
                known.add(id(entry))
                self._count_applications(entry, name)

    def _registered_any(self, group: GroupLoad) -> bool:
        return any(name in self._entries_by_pattern for name in group.patterns)

    def backend(self):
        """A MindieSDBackend (the target's own class) that also records the graphs around its pattern pass."""
        base = self.target.module("mindie_sd_backend").MindieSDBackend
        sink, finals = self.graphs, self.final_graphs
        session = self

        class ObservedMindieSDBackend(base):
            def __call__(self, graph, example_inputs):
                first = len(session.final_nodes)
                compiled = super().__call__(graph, example_inputs)
                return session._counting(compiled, session.final_nodes[first:])

            @classmethod
            def apply_pattern_match_passes(cls, graph, inputs):
                before, before_graph = snapshot(graph), copy.deepcopy(graph.graph)
                try:
                    session.activate()  # upstream's activation, plus groups not in pattern_registry
                    super().apply_pattern_match_passes(graph, inputs)
                except Exception as exc:
                    sink.append(PassCapture(before, None, describe_error(exc, session.target.tree.root), graph,
                                            before_graph))
                    raise
                sink.append(PassCapture(before, snapshot(graph), None, graph, before_graph))

            @classmethod
            def apply_decompose_auto_functionalized_pass(cls, graph):
                super().apply_decompose_auto_functionalized_pass(graph)
                # graph_rewrite_after_freezing's last rewrite: from here on the graph is the one that runs
                finals.append(snapshot(graph))
                session.final_nodes.append(final_graph(graph))
                session.kernel_sites.extend(check_graph(graph, session.applications, session._kernel_cache))

        return ObservedMindieSDBackend()

    def _counting(self, compiled, graphs: list[FinalGraph]):
        """`compiled`, counting the fused calls each of its runs makes (the graphs its compile ended with)."""
        fused = Counter()
        for g in graphs:
            fused.update(dict(g.fused_calls))
        if not fused or not callable(compiled):
            return compiled
        made = self.fused_calls_run

        def counted(*args, **kwargs):
            made.update(fused)
            return compiled(*args, **kwargs)

        # not functools.wraps: torch 2.9's dynamo follows a copied `_torchdynamo_orig_callable` past this wrapper
        if hasattr(compiled, "_boxed_call"):
            counted._boxed_call = compiled._boxed_call  # type: ignore[attr-defined]
        return counted

    # -- what happened
    @property
    def replacements(self) -> int:
        """Inductor's own counter of applied replacements (every pass application in this session)."""

        return int(counters()["inductor"]["pattern_matcher_count"])

    @property
    def pass_log_counts(self) -> list[int]:
        """The N of each "PatternMatchPass replace N patterns." line MindIE-SD logged in this session."""
        counts = []
        for record in self.log:
            match = REPLACE_LINE.search(record.getMessage())
            if match:
                counts.append(int(match.group(1)))
        return counts

    def warnings(self) -> list[str]:
        return [r.getMessage().splitlines()[0] for r in self.log if r.levelno >= logging.WARNING]

    def pattern_entries(self) -> dict[str, list]:
        """pattern name -> the PatternEntry objects the matcher registered for it."""
        return {k: list(v) for k, v in self._entries_by_pattern.items()}

    def registered_patterns(self) -> list[RegisteredPattern]:
        found = []
        for name, entries in self._entries_by_pattern.items():
            for entry in entries:
                try:
                    printed = pretty(entry.pattern)
                except Exception as exc:  # noqa: BLE001 - printer gaps must not hide the rest
                    printed = f"<PatternPrettyPrinter failed: {exc}>"
                found.append(RegisteredPattern(
                    name=name, printed=printed, anchor_targets=pattern_anchor_targets(entry.pattern),
                    op_targets=tuple(sorted(pattern_op_targets(entry.pattern))),
                ))
        return found
