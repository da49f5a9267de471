"""The run's own profiles: each written into its folder under the run's folder, emptied first, compiled without the
groups asked and without a tree group that raises on the model."""

from __future__ import annotations

import shutil
from pathlib import Path

from sdcompile.lifecycle.context import RunContext
from sdcompile.phases.profile.phase import profile_leaving_out_raising


def profile_into(ctx: RunContext, mode: str, out: Path, leave_out: tuple[str, ...]) -> tuple[bool, tuple[str, ...]]:
    """Profile the model into one of the run's own folders, compiled without the groups `leave_out` names and, as
    integrate compiles, without a group of the tree that raises on this model (its notes name it and the switch).
    Returns (whether a profile was written, the groups left out)."""

    opt = ctx.options
    empty_own_folder(out)
    ctx.say(f"profiling {ctx.model_name} ({mode}{', without ' + ', '.join(leave_out) if leave_out else ''})")
    return profile_leaving_out_raising(opt.model, opt.model_file, mode, out, leave_out, ctx.say, dtype=opt.dtype,
                                       repo=ctx.repo, plain_cpu=opt.plain_cpu, force=True, timeout=opt.timeout,
                                       build=opt.build)


def empty_own_folder(folder: Path) -> None:
    """Empty one of the run's own profile folders before it profiles into it: whatever an interrupted run left there
    (a profile cut short by an older sdcompile looks like someone else's) is not kept, and the pair's lock says no
    other command is writing there."""
    if folder.is_dir() and not folder.is_symlink():
        shutil.rmtree(folder)
    elif folder.exists() or folder.is_symlink():
        folder.unlink()
