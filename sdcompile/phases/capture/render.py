from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from sdcompile.phases.capture.results import CaptureResult
from sdcompile.rendering.closing import Verdict, close


def render_capture(console: Console, result: CaptureResult) -> None:
    console.print(f"wrote {result.out}: {result.model_class} ({result.config_fields} config fields), "
                  f"{result.calls} forward call(s) on {result.device or 'an unknown device'}", highlight=False)
    for argument in result.arguments:
        console.print(f"  {argument.name}: {argument.value}", highlight=False)
    if result.left_out:
        console.print(f"  not kept (replay leaves them at their defaults): {', '.join(result.left_out)}",
                      highlight=False)
    versions = ", ".join(f"{k} {v}" for k, v in result.versions.items() if v)
    console.print(f"recorded under {versions}", highlight=False)
    if result.stopped:
        console.print("the program was stopped once the capture was written (--keep-running lets it finish)",
                      highlight=False)
    elif result.calls < result.calls_wanted:
        console.print(f"the program ended after {result.calls} of the {result.calls_wanted} forward calls asked for "
                      f"(exit status {result.exit_status})", highlight=False)
    elif result.exit_status != 0:
        console.print(f"the program exited with status {result.exit_status} after the capture", highlight=False)
    console.print(f"next: {escape(result.next_command)}", highlight=False, soft_wrap=True)  # pastes whole
    close(console, verdict(result))


def verdict(result: CaptureResult) -> Verdict:
    return Verdict("PASS", f"captured {result.model_class.rsplit('.', 1)[-1]} as {result.model}: {result.out}")
