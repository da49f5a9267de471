"""Run every rendering case's command with --json, in one process, in a scratch folder per model (the Flux and Wan
RMSNorm lifecycles: `run` first, then each phase on its own against the run's tree and profiles), and keep each
document in data/<case>.json with the scratch folder written as render_cases.SCRATCH, the versions of torch,
diffusers and Python as 2.N, 0.N and 3.N, and every `seconds` as 1.0, so a capture on another machine or torch
changes only what the commands print differently.

    python tests/rendering/render_capture.py [CASE ...]   # then python tests/rendering/render_cases.py (golden)
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs"))
from guide_runner import run_one  # noqa: E402
from render_cases import CASES, DATA, SCRATCH  # noqa: E402


def _run(argv: list[str]) -> tuple[int, str, str]:
    """`sdcompile ARGV` in this process (the docs tests' runner): (exit code, stdout, stderr)."""
    ran = run_one(argv)
    return ran["exit_code"], ran["stdout"], ran["stderr"]


def _versions() -> dict[str, str]:
    """The versions this capture ran with, and what data/ holds in their place (so a capture under another torch or
    diffusers changes only what the commands print differently)."""
    import platform
    from importlib.metadata import version

    torch = version("torch")
    return {torch: "2.N", torch.split("+")[0]: "2.N", version("diffusers"): "0.N", platform.python_version(): "3.N"}


def steady_text(text: str, versions: dict[str, str]) -> str:
    for real, shown in sorted(versions.items(), key=lambda kv: -len(kv[0])):
        text = text.replace(real, shown)
    return text


def _steady(data):
    """Every `seconds` as 1.0: timings differ from run to run, the layout does not."""
    if isinstance(data, dict):
        return {k: 1.0 if k == "seconds" and isinstance(v, (int, float)) else _steady(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_steady(v) for v in data]
    return data


def capture(names: list[str]) -> None:
    DATA.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for model in ("flux", "wan"):
            cwd = Path(tmp, model).resolve()
            cwd.mkdir()
            os.chdir(cwd)
            fill = {"model": model, "tree": f".sdcompile/{model}/rmsnorm/run/mindiesd-3.1.0",
                    "profiles": f".sdcompile/{model}/rmsnorm/run/profiles"}
            for name, case in CASES.items():
                if not name.startswith(f"{model}.") or (names and name not in names and name != f"{model}.run"):
                    continue
                code, stdout, stderr = _run([a.format(**fill) for a in case.argv] + ["--json"])
                if code not in (0, 1):
                    raise SystemExit(f"{name}: exit {code}\n{stderr[-2000:]}")
                text = steady_text(stdout.replace(str(cwd), f"{SCRATCH}/{model}"), _versions())
                data = _steady(json.loads(text))
                (DATA / f"{name}.json").write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", "utf-8")
                print(f"{name}: exit {code}", flush=True)


if __name__ == "__main__":
    capture(sys.argv[1:])
