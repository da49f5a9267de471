from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from sdcompile.phases.new_model.results import NewModelResult
from sdcompile.rendering.closing import Verdict, close
from sdcompile.rendering.versions import versions_line


def render_new_model(console: Console, result: NewModelResult) -> None:
    if result.dry_run:
        console.print(result.source, highlight=False, markup=False, soft_wrap=True)
    action = "would write" if result.dry_run else "wrote"
    console.print(f"{action} {result.out}: {result.class_name} at size {result.size}", highlight=False)
    if result.changed:
        console.print(f"  config: the class's defaults, {', '.join(result.changed)}", highlight=False)
    console.print(f"  inputs: {result.inputs}", highlight=False)
    if result.missing:
        console.print(f"  left to fill in (inputs() raises until then): {result.problem}", highlight=False)
    if result.forward_error:
        console.print(f"  its forward raised with every input tried; the last: {result.forward_error}",
                      highlight=False)
    ran = [p for p in result.primitives if p.implementations]
    absent = [p.title for p in result.primitives if not p.implementations]
    for p in ran:
        console.print(f"  ran: {p.title} at {p.sites} site call(s): {', '.join(p.implementations)}", highlight=False)
    if absent:
        console.print(f"  not run by this forward: {', '.join(absent)}", highlight=False)
    console.print(f"device {result.device} · {versions_line(result.versions, target=False)}", highlight=False)
    if not result.dry_run:
        then = ("after filling them in" if result.missing else "after correcting inputs() (or the config)"
                if result.forward_error else "next")
        console.print(f"{then}: {escape(result.next_command)}", highlight=False, soft_wrap=True)  # pastes whole
    close(console, verdict(result))


def verdict(result: NewModelResult) -> Verdict:
    where = "previewed" if result.dry_run else f"written to {result.out}"
    if result.missing:
        return Verdict("FAIL", f"factory for {result.class_name} {where}; it runs once you fill in "
                               f"{', '.join(result.missing)} in inputs()")
    if result.forward_error:
        return Verdict("FAIL", f"factory for {result.class_name} {where}; its forward raised with every input "
                               "tried: correct inputs() (or the config)")
    ran = ", ".join(p.title for p in result.primitives if p.implementations) or "no primitive"
    return Verdict("PASS", f"factory for {result.class_name} {where}; its forward ran {ran}")
