"""The conventions a CLI user expects: -h, shell completion, -q beside -v, "did you mean" on every closed choice with
the corrected command line, typed choices in --help, examples that parse, a project config file with the documented
precedence, one line and exit 130 on Ctrl-C, torch's own chatter only with -v."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from sdcompile.cli.app import COMMANDS, app
from sdcompile.cli.examples import EXAMPLES

NAMES = [entry.name for entry in COMMANDS]


ENV = ("SDCOMPILE_REPO", "SDCOMPILE_WORKDIR", "SDCOMPILE_MIN_COSINE", "SDCOMPILE_MAX_INFLATION")


def _cli(*args: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {**{k: v for k, v in os.environ.items() if k not in ENV}, **(env or {})}
    return subprocess.run([sys.executable, "-m", "sdcompile", *args], capture_output=True, text=True, timeout=300,
                          cwd=cwd, env=full_env)


def _parse(args: list[str]):
    """Parse `sdcompile ARGS` as the CLI would (option values through their parsers), running nothing."""
    group = typer.main.get_command(app)
    root = group.context_class(group, info_name="sdcompile")
    return group.get_command(root, args[0]).make_context(args[0], args[1:], parent=root)


def _invoke(*args: str, env: dict | None = None):
    return CliRunner().invoke(app, list(args), env=env, catch_exceptions=False)


# --- -h and completion ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv", [[], *([name] for name in NAMES)])
def test_h_is_help_on_the_root_and_every_command(argv):
    short, long = _invoke(*argv, "-h"), _invoke(*argv, "--help")
    assert short.exit_code == long.exit_code == 0
    assert short.output == long.output and "Usage: " in short.output
    assert "-h, --help" in short.output


def test_shell_completion_is_offered_and_completes_option_values(tmp_path):
    help_text = _invoke("--help").output
    assert "--install-completion" in help_text and "--show-completion" in help_text
    # typer's switch for naming the shell instead of detecting it from the parent process (none under nohup or CI)
    script = _cli("--show-completion", "bash", env={"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"})
    assert script.returncode == 0 and "_SDCOMPILE_COMPLETE" in script.stdout
    env = {"_SDCOMPILE_COMPLETE": "complete_bash", "COMP_WORDS": "sdcompile scaffold --op r", "COMP_CWORD": "3"}
    words = _cli(cwd=tmp_path, env=env)
    assert words.returncode == 0 and words.stdout.split() == ["rmsnorm", "rope"], words.stderr


def test_a_mistyped_command_is_exit_2_with_the_close_ones_and_completion_lists_every_command(tmp_path):
    """Commands are built when they run: the suggestion and the completion come from the command table."""
    typo = _invoke("copy-audi")
    assert typo.exit_code == 2 and "No such command 'copy-audi'. Did you mean 'copy-audit'?" in typo.output
    far = _invoke("zzz")
    assert far.exit_code == 2 and "No such command 'zzz'." in far.output and "Did you mean" not in far.output
    env = {"_SDCOMPILE_COMPLETE": "complete_bash", "COMP_WORDS": "sdcompile co", "COMP_CWORD": "1"}
    words = _cli(cwd=tmp_path, env=env)
    assert words.returncode == 0 and words.stdout.split() == ["copy-audit"], words.stderr


# --- -q ------------------------------------------------------------------------------------------------------------
def test_quiet_drops_messages_but_keeps_the_result_and_the_error(tmp_path):
    loud, quiet = _cli("status", cwd=tmp_path), _cli("-q", "status", cwd=tmp_path)
    assert loud.returncode == quiet.returncode == 0
    assert "note: no MindIE-SD tree" in loud.stderr  # status found no tree: an informational note
    assert quiet.stderr == "" and quiet.stdout == loud.stdout and "No model/op pairs" in quiet.stdout
    as_json = _cli("-q", "status", "--json", cwd=tmp_path)
    assert as_json.stderr == "" and json.loads(as_json.stdout)["target"] is None
    failed = _cli("-q", "status", "--repo", str(tmp_path / "none"), cwd=tmp_path)
    assert failed.returncode == 2 and failed.stderr.startswith("error: ") and len(failed.stderr.splitlines()) == 1


def test_quiet_and_verbose_together_are_refused():
    both = _cli("-q", "-v", "backends")
    assert both.returncode == 2 and both.stderr.startswith("error: -q/--quiet and -v/--verbose were both given")


# A torch the tree has a variant for but sdcompile's suite does not run on: torch_support says so for any release here.
_UNTESTED_TORCH = ("import dataclasses, sys; import sdcompile.core.torchcompat.support as support; real = "
                   "support.torch_support; support.torch_support = lambda *a, **k: dataclasses.replace(real(*a, **k), "
                   "tested=('2.0',)); sys.argv[0] = 'sdcompile'; from sdcompile.cli.app import main; main()")


def test_an_untested_torch_is_noted_before_the_output_not_before_a_bad_input_error(tmp_path):
    def run(*args):
        return subprocess.run([sys.executable, "-c", _UNTESTED_TORCH, *args], capture_output=True, text=True,
                              timeout=300, cwd=tmp_path, env={k: v for k, v in os.environ.items() if k not in ENV})

    bad = run("analyze", "--model", "flx", "--op", "rmsnorm")
    assert bad.returncode == 2 and bad.stderr.startswith("error: unknown model 'flx'"), bad.stderr
    assert len(bad.stderr.splitlines()) == 1
    ran = run("analyze", "--model", "flux", "--op", "rmsnorm")
    assert ran.returncode == 0, ran.stderr
    first = ran.stderr.splitlines()[0]
    assert first.startswith("note: torch ") and "but sdcompile is tested on torch 2.0" in first, ran.stderr
    quiet = run("-q", "analyze", "--model", "flux", "--op", "rmsnorm")
    assert quiet.returncode == 0 and quiet.stderr == "" and quiet.stdout.splitlines()[-1] == ran.stdout.splitlines()[-1]


# --- did you mean ----------------------------------------------------------------------------------------------------
CASES = [
    (["scaffold", "--model", "flux", "--op", "rmsnrom", "--repo", "./MindIE-SD"], "rmsnorm",
     "sdcompile scaffold --model flux --op rmsnorm --repo ./MindIE-SD"),
    (["analyze", "--model", "flx", "--op", "rmsnorm"], "flux", "sdcompile analyze --model flux --op rmsnorm"),
    (["explain", "mismatc"], "mismatch", "sdcompile explain mismatch"),
    (["analyze", "--op", "alll"], "all", "sdcompile analyze --op all"),
    (["verify", "--dtype", "bf61"], "bf16", "sdcompile verify --dtype bf16"),
    (["scaffold", "--dtype", "bf16,fp23"], "fp32", None),
    (["run", "--path=replacment"], "replacement", "sdcompile run --path=replacement"),
    (["debug", "--stage", "after-freezng"], "after-freezing", "sdcompile debug --stage after-freezing"),
    (["profile", "--mode", "eagre", "--out", "x"], "eager", "sdcompile profile --mode eager --out x"),
    (["profile", "--mode", "eager", "--out", "x", "--backend", "torchair"], "torchair_ge",
     "sdcompile profile --mode eager --out x --backend torchair_ge"),
    (["copy-audit", "a", "b", "--inflation-metric", "cont"], "count",
     "sdcompile copy-audit a b --inflation-metric count"),
    (["copy-audit", "a", "b", "--attn", "3"], "3d", "sdcompile copy-audit a b --attn 3d"),
]


@pytest.mark.parametrize("argv, suggestion, corrected", CASES, ids=[" ".join(c[0][:3]) for c in CASES])
def test_a_misspelt_choice_names_the_closest_and_the_corrected_command(argv, suggestion, corrected, tmp_path):
    result = _cli(*argv, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith("error: "), result.stderr
    problem, fix = result.stderr.split(" — ", 1)
    assert f"did you mean {suggestion}" in fix
    if corrected:
        assert f"`{corrected}`" in fix
        _parse(shlex.split(corrected)[1:])  # the corrected command parses: the suggestion is a value the option takes


@pytest.mark.torch_independent  # the tree's group names
def test_a_misspelt_pattern_group_names_the_closest_of_the_tree_s_groups(mindiesd_tree, tmp_path):
    result = _cli("debug", "--group", "WanRmsNormPatternGrup", "--repo", str(mindiesd_tree), "--workdir",
                  str(tmp_path / "ws"), cwd=tmp_path)
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1, result.stderr
    assert f"no pattern group 'WanRmsNormPatternGrup' in {mindiesd_tree} — did you mean WanRmsNormPatternGroup: " \
           f"`sdcompile debug --group WanRmsNormPatternGroup --repo {mindiesd_tree}" in result.stderr


def test_a_misspelt_registry_entry_names_the_closest_entry(mindiesd_tree, tmp_path):
    result = _cli("register", "--model", "flux", "--op", "rmsnorm", "--repo", str(mindiesd_tree), "--before",
                  "enable_rms_nrom", "--dry-run", "--allow-missing", cwd=tmp_path)
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1, result.stderr
    assert "no pattern_registry entry 'enable_rms_nrom' for --before — did you mean enable_rms_norm: " \
           "`sdcompile register --model flux --op rmsnorm" in result.stderr


def test_a_choice_is_accepted_in_any_case_and_listed_in_help():
    assert "<rmsnorm|rope|adaln|gelu|all>" in _invoke("analyze", "--help").output
    assert "<auto|replacement|graph-entry|graph-pass>" in _invoke("run", "--help").output
    ctx = _parse(["scaffold", "--op", "RMSNorm", "--dtype", "BF16,fp32"])
    assert (ctx.params["op"], ctx.params["dtype"]) == ("rmsnorm", "bf16,fp32")


def test_the_choice_enums_come_from_their_canonical_tuples():
    from sdcompile.cli import options
    from sdcompile.core.ops import OPS
    from sdcompile.phases.analyze.phase import OP_CHOICES
    from sdcompile.phases.scaffold.phase import PATHS

    assert tuple(options.Op) == OPS and tuple(options.OpOrAll) == OP_CHOICES
    assert tuple(options.ScaffoldPath) == PATHS


# --- examples --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_every_command_s_help_has_examples_that_parse_and_fits_80_columns(name):
    help_text = CliRunner().invoke(app, [name, "--help"], env={"COLUMNS": "80"}).output
    assert "Examples:" in help_text
    assert all(len(line) <= 80 for line in help_text.splitlines()), [ln for ln in help_text.splitlines()
                                                                     if len(ln) > 80]
    for example in EXAMPLES[name]:
        assert all(line.strip() in help_text for line in example.splitlines())
        args = shlex.split(example.replace("\\\n", " "))
        assert args[:2] == ["sdcompile", name]
        _parse(args[1:])  # raises on an unknown option or a bad value


# --- project config --------------------------------------------------------------------------------------------------
def _captured_run(monkeypatch, *args: str, env: dict | None = None) -> dict:
    """Run `sdcompile run ...` up to the lifecycle and return the options it was given (the lifecycle is replaced
    by a stand-in that records them and stops with exit 2)."""
    import sdcompile.lifecycle.pipeline as pipeline
    from sdcompile.util.errors import BadInput

    seen = {}

    def stand_in(model, model_file, op, dtype, plain_cpu, name, repo, workdir, restart, min_cosine, max_inflation,
                 **_):
        seen.update(repo=repo, workdir=workdir, min_cosine=min_cosine, max_inflation=max_inflation)
        raise BadInput("stand-in", "stop here")

    monkeypatch.setattr(pipeline, "run_lifecycle", stand_in)
    for key in ("SDCOMPILE_REPO", "SDCOMPILE_WORKDIR", "SDCOMPILE_MIN_COSINE", "SDCOMPILE_MAX_INFLATION"):
        monkeypatch.delenv(key, raising=False)
    result = CliRunner().invoke(app, ["run", "--model", "flux", *args], env=env)
    assert result.exit_code == 2 and "stand-in" in result.output, result.output
    return seen


def test_config_precedence_is_command_line_then_environment_then_file(tmp_path, monkeypatch):
    from sdcompile.testing.numerics import DEFAULT_MIN_COSINE

    project = tmp_path / "project"
    (project / "deep" / "er").mkdir(parents=True)
    monkeypatch.chdir(project / "deep" / "er")  # the nearest parent's file is found
    assert _captured_run(monkeypatch)["min_cosine"] == DEFAULT_MIN_COSINE  # no file: the built-in default
    (project / "sdcompile.toml").write_text('workdir = "ws"\nrepo = "tree"\nmin_cosine = 0.5\nmax_inflation = 3\n')
    seen = _captured_run(monkeypatch)
    assert seen == {"repo": None, "workdir": project / "ws", "min_cosine": 0.5, "max_inflation": 3.0}
    env = {"SDCOMPILE_MIN_COSINE": "0.7", "SDCOMPILE_WORKDIR": str(tmp_path / "env-ws")}
    seen = _captured_run(monkeypatch, env=env)
    assert (seen["min_cosine"], seen["workdir"], seen["max_inflation"]) == (0.7, tmp_path / "env-ws", 3.0)
    seen = _captured_run(monkeypatch, "--min-cosine", "0.9", "--workdir", str(tmp_path / "cli-ws"), env=env)
    assert (seen["min_cosine"], seen["workdir"]) == (0.9, tmp_path / "cli-ws")


def test_config_repo_applies_where_the_environment_s_does(tmp_path):
    (tmp_path / "sdcompile.toml").write_text('repo = "no-such-tree"\n')
    from_file = _cli("status", cwd=tmp_path)
    assert from_file.returncode == 2
    assert f"{tmp_path / 'no-such-tree'} (from repo in {tmp_path / 'sdcompile.toml'}) is not a folder" \
        in from_file.stderr
    from_env = _cli("status", cwd=tmp_path, env={"SDCOMPILE_REPO": str(tmp_path / "env-tree")})
    assert f"{tmp_path / 'env-tree'} (from $SDCOMPILE_REPO) is not a folder" in from_env.stderr
    from_cli = _cli("status", "--repo", str(tmp_path / "cli-tree"), cwd=tmp_path,
                    env={"SDCOMPILE_REPO": str(tmp_path / "env-tree")})
    assert f"{tmp_path / 'cli-tree'} is not a folder" in from_cli.stderr


def test_the_target_says_which_source_found_it(tmp_path, mindiesd_tree):
    def found_by(*args, env=None):
        result = _cli("status", "--json", *args, cwd=tmp_path, env=env)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)["target"]["found_by"]

    assert found_by("--repo", str(mindiesd_tree)) == "--repo"
    assert found_by(env={"SDCOMPILE_REPO": str(mindiesd_tree)}) == "$SDCOMPILE_REPO"
    (tmp_path / "sdcompile.toml").write_text(f'repo = "{mindiesd_tree}"\n')
    assert found_by() == f"repo in {tmp_path / 'sdcompile.toml'}"
    (tmp_path / "sdcompile.toml").write_text('repo = "gone"\n')
    missing = _cli("status", cwd=tmp_path)
    assert missing.returncode == 2
    assert f"{tmp_path / 'gone'} (from repo in {tmp_path / 'sdcompile.toml'}) is not a folder" in missing.stderr


def test_pyproject_tool_table_is_read_and_sdcompile_toml_wins(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.sdcompile]\nrepo = "from-pyproject"\n')
    (tmp_path / "sub").mkdir()
    result = _cli("status", cwd=tmp_path / "sub")
    assert f"{tmp_path / 'from-pyproject'} (from repo in {tmp_path / 'pyproject.toml'})" in result.stderr
    (tmp_path / "sdcompile.toml").write_text('repo = "from-own-file"\n')
    assert f"{tmp_path / 'from-own-file'} (from repo in {tmp_path / 'sdcompile.toml'})" \
        in _cli("status", cwd=tmp_path / "sub").stderr


@pytest.mark.parametrize("content, expected", [
    ('min_cosin = 0.9\n', "unknown key 'min_cosin' — did you mean min_cosine?"),
    ('min_cosine = "high"\n', "min_cosine = 'high' is not a number"),
    ('repo = 3\n', "repo = 3 is not a path"),
    ('repo = \n', "cannot be read as TOML"),
])
def test_a_bad_config_file_is_exit_2_naming_file_and_key(tmp_path, content, expected):
    (tmp_path / "sdcompile.toml").write_text(content)
    result = _cli("backends", cwd=tmp_path)
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith(f"error: {tmp_path / 'sdcompile.toml'}") and expected in result.stderr


def test_config_keys_are_documented():
    from sdcompile.util.project_config import KEYS

    reference = (Path(__file__).parents[1] / "docs" / "cli.md").read_text(encoding="utf-8")
    assert "## Project config" in reference and all(f"| `{key}` |" in reference for key in KEYS)


# --- Ctrl-C ----------------------------------------------------------------------------------------------------------
def test_ctrl_c_is_one_line_and_exit_130(tmp_path):
    code = ("import time, sdcompile.phases.backends.phase as b\n"
            "def slow(*a, **k):\n    print('ready', flush=True)\n    time.sleep(60)\n"
            "b.collect_backends = slow\nfrom sdcompile.cli.app import main\nmain(['backends'])\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=tmp_path)
    assert proc.stdout.readline().strip() == "ready"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert err.splitlines() == [err.strip()] and err.startswith("interrupted — nothing sdcompile writes was left "
                                                                "half-written"), err
    assert "Traceback" not in err and "Aborted" not in err and out == ""


@pytest.mark.parametrize("existing", [False, True], ids=["new DEST", "empty DEST"])
def test_ctrl_c_during_fetch_target_leaves_dest_as_it_was(tmp_path, mindiesd_cache, existing):
    dest = tmp_path / "MindIE-SD"
    if existing:
        dest.mkdir()
    code = ("import sys, time, sdcompile.core.target.package_cache as cache\n"
            "real, count = cache._copy_or_link, [0]\n"
            "def slow(src, dst):\n    real(src, dst)\n    count[0] += 1\n"
            "    if count[0] == 5:\n        print('ready', flush=True)\n        time.sleep(60)\n"
            "cache._copy_or_link = slow\nfrom sdcompile.cli.app import main\nmain(['fetch-target', sys.argv[1]])\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(dest)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=tmp_path)
    assert proc.stdout.readline().strip() == "ready"
    assert any(dest.rglob("*"))  # half a tree, while it copies
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and err.splitlines()[-1].startswith("interrupted — "), err
    assert (dest.is_dir() and not any(dest.iterdir())) if existing else not dest.exists()


# --- torch's chatter -------------------------------------------------------------------------------------------------
def test_torch_warnings_show_only_with_verbose(tmp_path):
    code = ("import sys, warnings, sdcompile.phases.backends.phase as b\n"
            "real = b.collect_backends\n"
            "def noisy(*a, **k):\n"
            "    warnings.warn_explicit('Torchinductor does not support code generation for complex operators.', "
            "UserWarning, '/x/site-packages/torch/_inductor/lowering.py', 1)\n"
            "    warnings.warn_explicit('a model file warning', UserWarning, '/x/model.py', 1)\n"
            "    return real(*a, **k)\n"
            "b.collect_backends = noisy\nfrom sdcompile.cli.app import main\nmain(sys.argv[1:])\n")
    plain = subprocess.run([sys.executable, "-c", code, "backends"], capture_output=True, text=True, cwd=tmp_path)
    loud = subprocess.run([sys.executable, "-c", code, "-v", "backends"], capture_output=True, text=True,
                          cwd=tmp_path)
    assert plain.returncode == loud.returncode == 0
    assert "complex operators" not in plain.stderr and "a model file warning" in plain.stderr
    assert "complex operators" in loud.stderr


def test_inductor_s_complex_operator_warning_shows_only_with_verbose(mindiesd_tree, tmp_path):
    """Qwen-Image's RoPE is complex: compiling it makes inductor warn that it cannot generate code for it."""
    args = ("verify", "--group", "WanRmsNormPatternGroup", "--model", "qwenimage", "--repo", str(mindiesd_tree))
    plain = _cli(*args, "--workdir", str(tmp_path / "a"), cwd=tmp_path)
    loud = _cli("-v", *args, "--workdir", str(tmp_path / "b"), cwd=tmp_path)
    assert plain.returncode == loud.returncode, (plain.stderr[-2000:], loud.stderr[-2000:])
    assert "complex operators" not in plain.stderr
    assert "complex operators" in loud.stderr and "UserWarning from " in loud.stderr, loud.stderr[-3000:]


def test_profiler_lines_do_not_reach_stderr_without_verbose_and_quiet_drops_progress(tmp_path):
    result = _cli("profile", "--model", "flux", "--mode", "eager", "--out", str(tmp_path / "p"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "building flux" in result.stderr  # its progress messages
    assert "USDT" not in result.stderr and "profiler_start" not in result.stderr, result.stderr
    quiet = _cli("-q", "profile", "--model", "flux", "--mode", "eager", "--out", str(tmp_path / "q"), cwd=tmp_path)
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr
    assert quiet.stdout.splitlines()[0].split(" in ")[0] == result.stdout.splitlines()[0].split(" in ")[0]  # the result


def test_a_full_disk_is_the_machines_problem_not_a_bug(monkeypatch, tmp_path):
    """Writing into a full device (ENOSPC, wherever it sits in the exception's chain) exits 3 with one line naming the
    file and the fix, not 70: writes are whole or absent, so running again after freeing space is safe."""
    import errno

    from typer.testing import CliRunner

    import sdcompile.phases.copy_audit.phase as copy_audit_phase
    from sdcompile.cli.app import app

    def full(*_args, **_kwargs):
        try:
            raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "copy-audit.html"))
        except OSError as exc:
            raise RuntimeError("writing the report failed") from exc

    monkeypatch.setattr(copy_audit_phase, "run_copy_audit", full)
    (tmp_path / "e").mkdir()
    (tmp_path / "c").mkdir()
    result = CliRunner().invoke(app, ["copy-audit", str(tmp_path / "e"), str(tmp_path / "c")])
    assert result.exit_code == 3, result.output
    line = result.output.strip().splitlines()[-1]
    assert line.startswith("error: no space left on the device writing ") and "copy-audit.html" in line
    assert "free space there" in line and "bug" not in line
