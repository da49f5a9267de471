"""Rendering of `sdcompile doctor`: the environment, the behaviours that apply, one verdict line."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.padding import Padding
from rich.text import Text

from sdcompile.phases.doctor.results import DoctorReport, Problem
from sdcompile.rendering.closing import Verdict, close
from sdcompile.rendering.tables import FitTable
from sdcompile.rendering.versions import torch_npu_text


def _problem_text(p: Problem, r: DoctorReport) -> str:
    install = f"pip install '{r.torch_requirement}'"
    return {
        "torch-missing": f"torch is not installed; sdcompile needs torch {r.torch_range} — {install}",
        "torch-unsupported": f"torch {p.detail} is not supported (MindIE-SD has plugin variants for torch "
                             f"{r.torch_range}: {r.torch_range_from}) — {install}",
        "diffusers-missing": "diffusers is not installed — pip install diffusers (or reinstall sdcompile)",
        "torch-npu-unusable": f"torch_npu is installed but the NPU is not usable: {p.detail} — fix the NPU stack, "
                              "or set SDCOMPILE_DEVICE=emulated",
    }.get(p.key, f"{p.key}: {p.detail}")


def verdict(r: DoctorReport) -> Verdict:
    if r.problems:
        return Verdict("FAIL", "; ".join(_problem_text(p, r) for p in r.problems))
    v = r.versions
    target = (f"MindIE-SD {r.target.version} at {r.target.root}" if r.target
              else "no MindIE-SD tree here (pass --repo, or `sdcompile run` fetches one)")
    return Verdict("PASS", f"torch {v.torch_version} is supported ({r.torch_range}); device {r.device.label}; "
                           f"{torch_npu_text(v)}; {target}")


def render_doctor(console: Console, r: DoctorReport) -> None:
    v = r.versions
    env = FitTable(title="Environment", title_justify="left", show_header=False)
    env.add_column("what", style="bold", no_wrap=True)
    env.add_column("here", overflow="fold")
    torch_state = "" if v.torch_version is None else (
        f" (supported: {r.torch_range})" if r.torch_supported else f" [red](not supported: {r.torch_range})[/]")
    env.add_row("python", v.python)
    env.add_row("torch", escape(v.torch_version or "not installed") + torch_state)
    tested = " and ".join(r.torch_tested)
    env.add_row("torch range", escape(
        f"plugin variants {r.torch_range} from {r.torch_range_from or 'the target'}"
        + (f" ({r.torch_range_problem})" if r.torch_range_problem else "")
        + (f"; sdcompile is tested on {tested} ({r.torch_declared} declared)" if tested else "")
        + ("; this torch is accepted but untested" if r.torch_untested else "")))
    env.add_row("torch_npu", escape(torch_npu_text(v).removeprefix("torch_npu ")))
    env.add_row("diffusers", escape(v.diffusers_version or "not installed"))
    if r.target:
        env.add_row("MindIE-SD", escape(f"{r.target.version} at {r.target.root} (found by {r.target.found_by})"))
    else:
        env.add_row("MindIE-SD", f"[yellow]no tree[/]: {escape(r.target_error or '')}")
    env.add_row("device", escape(f"{r.device.label} — {r.device.reason}"))
    env.add_row("NPU kernels", escape(
        f"{r.triton}: the target's Triton kernels run under its interpreter when the NPU is emulated" if r.triton
        else "no Triton installed: the tree's CPU fallback runs (pip install 'sdcompile[kernels]')"))
    console.print(env)

    console.print("[bold]Version-dependent behaviours[/] (what each changes here)")
    if not r.torch_behaviours_probed:
        console.print("  torch's are not probed: torch is missing or unsupported", style="yellow")
    for b in r.behaviours:
        state = "[green]holds here[/]" if b.holds else "[dim]does not hold here[/]"
        console.print(f"  [bold]{escape(b.key)}[/] — {b.package} {escape(b.version_range)}: {state}")
        console.print(Padding(Text(b.effect), (0, 0, 0, 4)))  # wrapped lines keep the indent at any width
        console.print(Padding(Text(f"seen: {b.seen}", style="dim"), (0, 0, 0, 4)))
    # one line at any width (a log greps it), so no wrapping
    close(console, verdict(r))
