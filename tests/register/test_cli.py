"""`sdcompile register` through the real entry point: exit codes, --json, the table, --dry-run, --check."""

import json
import os
import subprocess
import sys
from importlib import metadata

from register_helpers import CONFIG, PASSES_INIT, snapshot


def test_register_again_check_undo(cli, target, tmp_path):
    args = ("register", "--repo", str(target), "--model", "flux", "--op", "rmsnorm", "--workdir", str(tmp_path / "ws"))
    original = snapshot(target)

    first = cli(*args, "--json")
    assert first.exit_code == 0, first.stderr
    doc = json.loads(first.stdout)  # exactly one JSON document
    assert (doc["outcome"], doc["position"]) == ("registered", 17)
    assert doc["names"]["group"] == "FluxRmsNormPatternGroup"
    assert all(f["changed"] for f in doc["files"])
    versions = doc["versions"]  # the edit names what made it
    assert versions["target_version"] == "3.1.0" and versions["torch_version"] == metadata.version("torch")
    assert versions["diffusers_version"] == metadata.version("diffusers")

    again = cli(*args)
    assert again.exit_code == 0, again.stderr
    assert "already registered" in again.stdout and "no change: empty diff" in again.stdout
    assert f"versions  torch {metadata.version('torch')}" in again.stdout and "MindIE-SD 3.1.0" in again.stdout

    check = cli("register", "--check", "--repo", str(target), "--json")
    assert check.exit_code == 0, check.stderr
    audit = json.loads(check.stdout)
    assert audit["passed"] is True and audit["entries"] == 17 and audit["errors"] == 0

    undo = cli(*args, "--undo")
    assert undo.exit_code == 0 and "removed" in undo.stdout
    assert snapshot(target) == original


def test_dry_run_prints_the_unified_diffs(cli, target, tmp_path):
    original = snapshot(target)
    res = cli("register", "--repo", str(target), "--model", "flux", "--op", "rmsnorm", "--dry-run",
              "--workdir", str(tmp_path / "ws"))
    assert res.exit_code == 0, res.stderr
    assert f"+++ b/{CONFIG}" in res.stdout and "+    enable_flux_rmsnorm: bool = True" in res.stdout
    assert "dry run: nothing written" in res.stdout
    assert snapshot(target) == original and not (tmp_path / "ws").exists()


def test_bad_input_is_one_line_and_exit_2(cli, target, tmp_path):
    bad_name = cli("register", "--repo", str(target), "--model", "Flux", "--op", "rmsnorm")
    assert bad_name.exit_code == 2
    assert bad_name.stderr.startswith("error: --model 'Flux' cannot form") and "Traceback" not in bad_name.stderr

    os.chmod(target / PASSES_INIT, 0o444)
    original = snapshot(target)
    read_only = cli("register", "--repo", str(target), "--model", "flux", "--op", "rmsnorm",
                    "--workdir", str(tmp_path / "ws"))
    assert read_only.exit_code == 2 and "read-only; every file is unchanged" in read_only.stderr
    assert snapshot(target) == original

    mixed = cli("register", "--check", "--repo", str(target), "--model", "flux")
    assert mixed.exit_code == 2 and "takes no --model" in mixed.stderr
    stray = cli("register", "--repo", str(target), "--model", "flux", "--op", "rmsnorm", "--import")
    assert stray.exit_code == 2 and "--import applies to --check only" in stray.stderr


def test_check_on_a_broken_copy_exits_1_and_names_the_problem(cli, mindiesd_tree):
    config = mindiesd_tree / CONFIG
    config.write_text(config.read_text().replace("    enable_fast_gelu: bool = True\n", ""))
    table = cli("register", "--check", "--repo", str(mindiesd_tree))
    assert table.exit_code == 1
    assert "entry-without-flag" in table.stdout and "enable_fast_gelu" in table.stdout
    doc = json.loads(cli("register", "--check", "--repo", str(mindiesd_tree), "--json").stdout)
    assert doc["passed"] is False and doc["errors"] == 1


def test_register_help_imports_no_libcst(tmp_path):
    code = (
        "import sys\nfrom sdcompile.cli.app import main\n"
        "try:\n    main(['register', '--help'])\nexcept SystemExit:\n    pass\n"
        "print('LIBCST=' + str('libcst' in sys.modules), file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert "LIBCST=False" in proc.stderr and "--before" in proc.stdout
