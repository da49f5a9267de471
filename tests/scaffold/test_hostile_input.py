"""A model file whose path holds a newline, quotes and a triple quote: refused at the command line (exit 2), and
when the phase is called with it anyway, it reaches the generated files only inside literals and comments."""

import ast
import shutil
from pathlib import Path

import pytest

HOSTILE_DIR = 'inj\nprint("INJECTED CODE RAN")\n#"""x'
HANDWRITTEN = Path(__file__).resolve().parents[1] / "analyze/data/handwritten_model.py"


def test_the_command_line_refuses_the_path_before_any_work(tmp_path, cli):
    folder = tmp_path / HOSTILE_DIR
    folder.mkdir()
    shutil.copy(HANDWRITTEN, folder / "m.py")
    result = cli("scaffold", "--model-file", f"{folder}/m.py:build", "--name", "handwritten", "--op", "rmsnorm",
                 "--workdir", str(tmp_path / "ws"))
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"error: --model-file {str(folder / 'm.py') + ':build'!r} contains the control character '\\n' — rename or "
        "move the file to a path without control characters"]
    assert not (tmp_path / "ws").exists()

    quoted = tmp_path / 'a"""b'
    quoted.mkdir()
    result = cli("analyze", "--model-file", f"{quoted}/m.py:build", "--op", "rmsnorm", "--workdir", str(tmp_path))
    assert result.exit_code == 2 and "contains '\"', which generated code and commands cannot quote" in result.stderr


def _calls(tree: ast.AST) -> set[str]:
    return {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}


@pytest.mark.slow
def test_generated_files_stay_valid_python_with_no_injected_statement(target, tmp_path):
    from sdcompile.phases.scaffold.phase import scaffold

    folder = tmp_path / HOSTILE_DIR
    folder.mkdir()
    shutil.copy(HANDWRITTEN, folder / "handwritten_model.py")
    result = scaffold(model_file=f"{folder}/handwritten_model.py:build", name="handwritten", op="rmsnorm",
                      dtype="fp32", repo=target, workdir=tmp_path / "ws")
    assert result.decision == "generate" and result.gate == "pass"
    files = [target / "mindiesd/compilation/patterns/handwritten_rmsnorm_pattern.py",
             target / "tests/compilation/patterns/test_handwritten_rmsnorm_pattern.py"]
    for path in files:
        text = path.read_text()
        tree = ast.parse(text)  # a newline or a triple quote that escaped its literal would not parse, or add code
        assert "print" not in _calls(tree), path.name
        assert "INJECTED CODE RAN" in text  # the path is there, as text
        assert not any(line.startswith("print(") for line in text.splitlines())
