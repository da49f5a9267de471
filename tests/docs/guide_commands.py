"""The commands a guide shows, and running them as a reader would.

A guide shows each command in a ```console block: the command after `$ `, the lines of output it quotes, and
`(exit N)`. A block whose output depends on torch says for which releases it holds in its info string
(```` ```console torch>=2.12 ````, ```` ```console torch<2.12 ````): it runs only under a torch in that range, so a
claim that differs by torch is shown once per range and each is checked on its torch (tests/torch_ranges.py). A
quoted line must appear in the command's output (stdout and stderr, whitespace collapsed); `…` in it stands for
any text (a duration, a path, the rest of a long line). Commands run in order, from one empty folder,
with $SDCOMPILE_REPO set to a fresh copy of the real MindIE-SD 3.1.0 tree. `sdcompile` commands run through the
real entry point; consecutive ones with the same device mode share one process (tests/docs/guide_runner.py), so
torch and diffusers are imported once per batch. Any other command (`patch`, `pytest`) runs in bash.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from torch_ranges import holds_here

ROOT = Path(__file__).resolve().parents[2]
RUNNER = Path(__file__).resolve().parent / "guide_runner.py"
FENCE = re.compile(r"```(\w*)([^\n]*)\n(.*?)```", flags=re.S)


@dataclass(frozen=True)
class GuideCommand:
    guide: str
    command: str  # as written after `$ `
    exit_code: int
    quoted: tuple[str, ...]

    @property
    def is_sdcompile(self) -> bool:
        return self.command.startswith("sdcompile ")

    @property
    def device_mode(self) -> str:
        return "plain-cpu" if "--plain-cpu" in shlex.split(self.command) else "emulated"


def console_blocks(path: Path) -> list[GuideCommand]:
    out = []
    for lang, info, body in FENCE.findall(path.read_text(encoding="utf-8")):
        if lang != "console" or not holds_here(info):
            continue
        lines = body.strip("\n").splitlines()
        assert lines[0].startswith("$ "), f"{path.name}: a console block starts with `$ command`: {lines[0]}"
        exits = [line for line in lines if re.fullmatch(r"\(exit \d+\)", line.strip())]
        assert len(exits) == 1, f"{path.name}: a console block states its exit code once: {lines[0]}"
        quoted = tuple(line for line in lines[1:] if line not in exits and line.strip())
        out.append(GuideCommand(path.name, lines[0][2:].strip(), int(exits[0].strip()[6:-1]), quoted))
    return out


def untested_commands(path: Path) -> list[str]:
    """`sdcompile` command lines in fenced blocks that are not console blocks (so no test runs them)."""
    found = []
    for lang, _info, body in FENCE.findall(path.read_text(encoding="utf-8")):
        if lang == "console":
            continue
        found += [line for line in body.splitlines() if re.match(r"\s*(\$ )?sdcompile ", line)]
    return found


def normal(text: str) -> str:
    return " ".join(text.split())


def missing_quotes(quoted: tuple[str, ...], output: str) -> list[str]:
    text = normal(output)
    missing = []
    for line in quoted:
        position = 0
        for part in (normal(p) for p in line.split("…")):
            found = text.find(part, position) if part else position
            if found < 0:
                missing.append(line)
                break
            position = found + len(part)
    return missing


@dataclass(frozen=True)
class Outcome:
    exit_code: int
    stdout: str
    stderr: str


def environment(repo: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SDCOMPILE_REPO", "SDCOMPILE_WORKDIR")}
    bin_dir = str(Path(sys.executable).parent)
    return {**env, "SDCOMPILE_REPO": str(repo), "COLUMNS": "200", "PATH": f"{bin_dir}:{env.get('PATH', '')}"}


def run_commands(commands: list[GuideCommand], cwd: Path, env: dict[str, str]) -> list[Outcome]:
    """Run `commands` in order; consecutive sdcompile commands of one device mode share a process."""
    outcomes: list[Outcome] = []
    i = 0
    while i < len(commands):
        cmd = commands[i]
        if not cmd.is_sdcompile:
            proc = subprocess.run(["bash", "-c", cmd.command], cwd=cwd, env=env, capture_output=True, text=True,
                                  timeout=900)
            outcomes.append(Outcome(proc.returncode, proc.stdout, proc.stderr))
            i += 1
            continue
        batch = [cmd]
        while (i + len(batch) < len(commands) and commands[i + len(batch)].is_sdcompile
               and commands[i + len(batch)].device_mode == cmd.device_mode):
            batch.append(commands[i + len(batch)])
        argv = [shlex.split(c.command)[1:] for c in batch]
        proc = subprocess.run([sys.executable, str(RUNNER)], input=json.dumps(argv), cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=1800)
        assert proc.returncode == 0, f"the guide runner failed: {proc.stderr[-3000:]}"
        outcomes += [Outcome(**r) for r in json.loads(proc.stdout)]
        i += len(batch)
    return outcomes


def check(commands: list[GuideCommand], outcomes: list[Outcome]) -> list[str]:
    """Every difference between what the guide says and what the commands did, one line each."""
    problems = []
    for cmd, got in zip(commands, outcomes, strict=True):
        where = f"{cmd.guide}: `{cmd.command}`"
        if got.exit_code != cmd.exit_code:
            problems.append(f"{where} exited {got.exit_code}, the guide says {cmd.exit_code}:\n"
                            f"{got.stdout[-2500:]}\n{got.stderr[-2500:]}")
            continue
        for line in missing_quotes(cmd.quoted, got.stdout + "\n" + got.stderr):
            problems.append(f"{where} does not print the quoted line:\n  {line}\n--- its output ---\n"
                            f"{got.stdout[-2500:]}\n{got.stderr[-1500:]}")
    return problems
