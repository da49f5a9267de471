"""Running a tiny model for phases 6 and 7: compiled through the target's own MindieSDBackend (every pattern
group the target loads, as a full pipeline would), against the same model in eager.

Used by `integrate --model` (layer 1: replacements on the real model graph; layer 3: the compiled model runs and
agrees with eager) and by `profile --mode compile`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sdcompile.catalogs import load
from sdcompile.core.npu.device import current
from sdcompile.core.npu.emulation import triton_runtime
from sdcompile.core.npu.kernel_check import KernelVerdict
from sdcompile.core.profiles.catalog import FusedOp
from sdcompile.core.target.discovery import find_target
from sdcompile.core.target.failures import describe_error, root_cause
from sdcompile.core.target.loader import load_target
from sdcompile.testing.numerics import approximation_atol, compare
from sdcompile.testing.reference import float32_forward, judged_against_reference, worth_a_reference
from sdcompile.util.errors import BadInput


@dataclass(frozen=True)
class LeftOut:
    """A target group left out of a compile because it raised on this model: inside the matcher, or in the NPU
    kernel of the fused op its replacement calls; or because that kernel computed another result than the op."""

    group: str  # "MiniMaxH3SwigluPatternGroup"
    flag: str | None  # its FusionPatterns flag ("enable_minimax_h3_swiglu"): what production turns off
    error: str  # the exception and the tree's file:line (failures.describe_error), or the kernel's error and site
    where: str = "matcher"  # "matcher", "npu-kernel" (raises) or "npu-differs" (another result than the op's)


# A compile that raises once per group would otherwise retry forever on a tree whose every group is broken.
MAX_LEFT_OUT = 3


@dataclass(frozen=True)
class ModelCompile:
    model: str  # the zoo label, e.g. "flux (FluxTransformer2DModel, tiny config)"
    class_name: str
    dtype: str
    device: str
    target: str  # the MindIE-SD tree compiled with
    groups: tuple[str, ...]  # pattern groups enabled (every group that loaded)
    replacements: int  # inductor's counter over the run
    pass_log_counts: tuple[int, ...]  # "PatternMatchPass replace N patterns." per compiled graph
    hits_by_pattern: dict[str, int]
    fused_nodes: dict[str, int]  # fused-op graph targets after the pattern pass (npu.npu_rms_norm.default: 2)
    op_fused_nodes: int | None  # nodes of --op's fused ops after the pattern pass (None without --op)
    final_fused_nodes: dict[str, int]  # fused-op targets in the graph that runs (after freeze() and the
    # after-freezing rewrites, where a custom graph pass acts)
    op_final_nodes: int | None  # nodes of --op's fused ops in the graph that runs (None without --op)
    error: str | None  # compile or run failure
    cosine: float | None
    max_abs: float | None
    min_cosine: float
    numerics_passed: bool
    left_out: tuple[LeftOut, ...] = ()  # target groups that raised on this model: compiled again without them
    # One more compiled forward (a step), counted: calls of the tree's Python fused ops ("mindiesd::scale_shift": 4)
    # and those that launched no kernel, i.e. fell back to eager at run time (the count contract)
    fused_calls: dict[str, int] = field(default_factory=dict)
    fell_back: dict[str, int] = field(default_factory=dict)


def op_graph_targets(op: FusedOp) -> tuple[str, ...]:
    """The emulated/real fused ops whose NPU kernel is one of `op`'s fused kernel types (fused_ops.toml)."""
    wanted = set(op.fused_types)
    return tuple(entry["name"].replace("::", ".") for entry in load("fused_ops").get("op", [])
                 if wanted & set(entry.get("npu_kernels", ())))


def attention_of(class_name: str) -> str | None:
    """2d/3d from the diffusers class name (…Transformer2DModel / …3DModel, Video models), else None."""
    name = class_name.rsplit(".", 1)[-1]
    if "3D" in name or "Video" in name:
        return "3d"
    if "2D" in name:
        return "2d"
    return None


@contextmanager
def compiled_model(built, repo: Path | str | None, leave_out: tuple[str, ...] = ()):
    """Yield (compiled callable, session, target) for `built` compiled through the target's MindieSDBackend with
    every group that loaded, but those `leave_out` names; a generated graph pass it names (its class) replaces
    nothing (its CHAINS emptied for the compile)."""
    from unittest import mock

    import torch

    target = load_target(find_target(repo))
    passes = {name: module for name in leave_out if (module := _generated_pass_module(name)) is not None}
    # a name or flag the tree has no group for: BadInput
    skipped = {target.group(name).group for name in leave_out if name not in passes}
    groups = [g.group for g in target.groups if g.loaded and g.group not in skipped]
    with torch.no_grad(), target.session(groups) as session:
        with contextlib.ExitStack() as stack:
            for module in passes.values():
                stack.enter_context(mock.patch.object(module, "CHAINS", []))
            session.activate()
            yield torch.compile(built.module, backend=session.backend(), dynamic=False), session, target


def check_leave_out(target, names: tuple[str, ...]) -> None:
    """Refuse (BadInput) a name that is no group (name or flag) of the tree and no graph pass generated in it, before
    anything is built."""

    for name in names:
        if _generated_pass_module(name) is not None:
            continue
        try:
            target.group(name)
        except BadInput as exc:
            raise BadInput(f"--leave-out {name}: {exc.message}",
                           f"{exc.fix or 'name a pattern group or its flag'}; or a graph pass class scaffold generated "
                           "in the tree") from exc


def _generated_pass_module(name: str):
    """The loaded module of the tree's passes/ defining the graph pass class `name` with a CHAINS list (what
    scaffold generates), or None."""
    import sys

    for module_name, module in list(sys.modules.items()):
        if (module_name.startswith("mindiesd.compilation.passes.") and isinstance(getattr(module, name, None), type)
                and isinstance(getattr(module, "CHAINS", None), list)):
            return module
    return None


def kernel_raising_group(session, target, verdict: KernelVerdict = KernelVerdict.RAISES):
    """(the target group whose replacement put a fused call that raises on the NPU kernel in this compile, the site),
    or (None, None): the session judged every fused call of the compiled graphs (core/target/kernel_sites.py).
    `verdict` DIFFERS: a call whose NPU kernel ran and computed another result than the op's own fallback."""

    for site in session.kernel_sites:
        if site.check.verdict is verdict and site.pattern:
            group = next((g for g in target.groups if g.loaded and site.pattern in g.patterns), None)
            if group is not None:
                return group, site
    return None, None


def raising_group(exc: BaseException, target):
    """The target group whose pattern file raised `exc` (its deepest frame in the tree's patterns/), or None: a
    failure elsewhere (the backend, the model, sdcompile) is no single group's."""
    import traceback

    patterns = Path(target.tree.root) / "mindiesd" / "compilation" / "patterns"
    frames = [Path(f.filename) for f in traceback.extract_tb(root_cause(exc).__traceback__)
              if Path(f.filename).parent == patterns]
    if not frames:
        return None
    module = frames[-1].stem
    return next((g for g in target.groups if g.loaded and g.module == module), None)


@dataclass
class FirstCall:
    """The first compiled forward, after leaving out the target groups that raised in it."""

    compiled: Any
    session: Any
    target: Any
    output: Any = None
    error: str | None = None  # the failure that stayed (retry_raising: one no group explains)
    raising: str | None = None  # the group whose pattern file raised `error`, when one did
    left_out: tuple[LeftOut, ...] = ()  # groups left out after they raised (retry_raising)


@contextmanager
def first_compiled_call(built, repo: Path | str | None, inputs: dict[str, Any], leave_out: tuple[str, ...] = (),
                        retry_raising: bool = True):
    """Compile `built` with every group but `leave_out` and call it once. With `retry_raising`, a target group that
    raises inside the matcher is left out too and the model compiled again (up to MAX_LEFT_OUT groups), so one broken
    group of the tree does not hide whether the others work on this model. Yields a FirstCall with the session still
    open (a profile runs inside it)."""

    left_out: list[LeftOut] = []
    while True:
        skipped = (*leave_out, *(x.group for x in left_out))
        with compiled_model(built, repo, skipped) as (compiled, session, target):
            call = FirstCall(compiled, session, target, left_out=tuple(left_out))
            with built.forward_deadline("compiled forward"):  # outside the except: a hang is not a failed compile
                try:
                    call.output = compiled(**inputs)
                except Exception as exc:  # noqa: BLE001 - a failed compile or run is the caller's finding
                    call.error = describe_error(exc, target.tree.root)
                    group, where = raising_group(exc, target), "matcher"
                    if group is None:  # the fused op's NPU kernel, at a site a group's replacement made
                        group, site = kernel_raising_group(session, target)
                        where = "npu-kernel"
                        if site is not None:
                            call.error = (f"{site.check.op} raises on the NPU kernel at {site.source or site.node}: "
                                          f"{site.check.message}")
                    call.raising = group.group if group is not None else None
                    if group is not None and retry_raising and len(left_out) < MAX_LEFT_OUT:
                        left_out.append(LeftOut(group.group, group.flag, call.error, where))
                        continue
                if call.error is None and retry_raising and len(left_out) < MAX_LEFT_OUT:
                    # a group whose fused call ran but computes something else on the NPU: its numbers are wrong
                    # for this model, so the rest is judged without it (and it is named)
                    group, site = kernel_raising_group(session, target, KernelVerdict.DIFFERS)
                    if group is not None:
                        left_out.append(LeftOut(group.group, group.flag, f"{site.check.op} at "
                                                f"{site.source or site.node}: {site.check.message}", "npu-differs"))
                        continue
            yield call
            return


def left_out_note(left: LeftOut) -> str:
    """What leaving a raising group out means, for people: the failure, and the switch production needs."""
    switch = (f"CompilationConfig.fusion_patterns.{left.flag} = False" if left.flag else
              f"take {left.group} out of pattern_registry")
    how = {"matcher": "raised inside the matcher",
           "npu-differs": "made a fused call whose NPU kernel computes another result than the op"}.get(
        left.where, "made a fused call that raises on the NPU")
    return (f"the target's {left.group} {how} on this model ({left.error}), so it was compiled "
            f"again without that group; until the group is fixed, a compile of this model needs {switch}")


def compile_and_compare(built, repo: Path | str | None, op: FusedOp | None, min_cosine: float,
                        progress: Callable[[str], None] = lambda _: None) -> ModelCompile:

    device = current()
    inputs = to_device(built.inputs, device.tensor_device)
    built.module.to(device.tensor_device)
    progress(f"compiling {built.label} through the target's MindieSDBackend")
    with first_compiled_call(built, repo, inputs) as call:
        session, target, compiled_out = call.session, call.target, call.output
        with built.forward_deadline():
            eager_out = built.module(**inputs)
        fused = _fused_counts(c.after for c in session.graphs)
        final = _fused_counts(session.final_graphs)
        op_nodes = op_final = None
        if op is not None:
            targets = op_graph_targets(op)
            op_nodes, op_final = (sum(n for name, n in counts.items() if name.rsplit(".", 1)[0] in targets
                                      or name in targets) for counts in (fused, final))
        calls, fell_back = _counted_step(call.compiled, inputs, built) if call.error is None else ({}, {})
        # fused ops that approximate what they replace (npu_fast_gelu) widen the elementwise tolerance by their error
        approximation = approximation_atol({*fused, *final})
        numerics = (compare(compiled_out, eager_out, min_cosine, inputs, approximation)
                    if compiled_out is not None else None)
        if worth_a_reference(numerics):  # a fused kernel rounding once, past eager's per-op roundings
            with built.forward_deadline("float32 forward"):
                reference = float32_forward(built.module, inputs)
            numerics = judged_against_reference(numerics, compiled_out, eager_out, reference)
        return ModelCompile(
            model=built.label, class_name=built.class_name, dtype=built.dtype_name, device=device.label,
            target=str(target.tree.root), groups=tuple(g.group for g in session.groups),
            replacements=session.replacements, pass_log_counts=tuple(session.pass_log_counts),
            hits_by_pattern=dict(session.hits_by_pattern), fused_nodes=fused, op_fused_nodes=op_nodes,
            final_fused_nodes=final, op_final_nodes=op_final,
            error=call.error, left_out=call.left_out, cosine=numerics.cosine if numerics else None,
            max_abs=numerics.max_abs if numerics else None,
            min_cosine=min_cosine, numerics_passed=bool(numerics and numerics.passed),
            fused_calls=calls, fell_back=fell_back,
        )


def _counted_step(compiled, inputs: dict[str, Any], built) -> tuple[dict[str, int], dict[str, int]]:
    """One more compiled forward with every fused call counted (emulation/triton_runtime.py): per op, the calls and
    those that launched no kernel."""

    with triton_runtime.recording() as rec, built.forward_deadline("compiled forward"):
        compiled(**inputs)
    return dict(rec.calls), {k: v for k, v in rec.fell_back.items() if v}


def _fused_counts(snapshots) -> dict[str, int]:
    """Fused-op node targets (npu.* / mindiesd.*, not the casts torch_npu < 2.9 traces) over `snapshots`, skipping
    graphs a pass failed on (None)."""
    casts = {e["name"].replace("::", ".") + ".default" for e in load("fused_ops").get("op", []) if e.get("cast")}
    counts: dict[str, int] = {}
    for snap in snapshots:
        if snap is None:
            continue
        for name, n in snap.op_counts().items():
            if name.startswith(("npu.", "mindiesd.")) and name not in casts:
                counts[name] = counts.get(name, 0) + n
    return counts


def to_device(inputs: dict[str, Any], device: str) -> dict[str, Any]:
    import torch

    return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}
