"""A user's model file is contained: what it prints never reaches --json's stdout, and sys.exit in it is exit 2
naming the file (left alone, `sys.exit(0)` would end the command with exit 0 and no output: a passing CI gate)."""

import json
from pathlib import Path

import pytest

HANDWRITTEN = (Path(__file__).resolve().parents[1] / "analyze/data/handwritten_model.py").read_text()


def test_prints_at_import_in_the_factory_and_in_forward_go_to_stderr_under_json(cli, tmp_path):
    noisy = HANDWRITTEN.replace("import torch\n", "import torch\n\nprint('printed at import')\n", 1)
    noisy = noisy.replace("def build(", "def _build(") + (
        "\n\ndef build():\n    print('printed by the factory')\n    module, kwargs = _build()\n"
        "    hook = lambda *_: print('printed in forward')\n    module.register_forward_pre_hook(hook)\n"
        "    return module, kwargs\n")
    (tmp_path / "noisy_model.py").write_text(noisy)
    result = cli("analyze", "--model-file", f"{tmp_path / 'noisy_model.py'}:build", "--op", "rmsnorm", "--json",
                 "--workdir", str(tmp_path / "ws"), cwd=tmp_path)
    assert result.exit_code == 0, result.stderr[-2000:]
    doc = json.loads(result.stdout)  # one JSON document, nothing else
    assert doc["model"] == "noisy_model-build"
    for said in ("printed at import", "printed by the factory", "printed in forward"):
        assert said in result.stderr


@pytest.mark.parametrize(("where", "code", "said"), [
    ("import", "import sys\nsys.exit(0)\n", "importing {path} failed: it called sys.exit(0)"),
    ("factory", "import sys\n\ndef build():\n    sys.exit('bye')\n",
     "{path}:build() failed: it called sys.exit('bye')"),
])
def test_sys_exit_in_the_model_file_is_exit_2_naming_it(cli, tmp_path, where, code, said):
    path = tmp_path / f"exits_at_{where}.py"
    path.write_text(code)
    result = cli("analyze", "--model-file", f"{path}:build", "--op", "rmsnorm", "--json", "--workdir",
                 str(tmp_path / "ws"), cwd=tmp_path)
    assert result.exit_code == 2
    [line] = result.stderr.splitlines()
    assert json.loads(result.stdout) == {"error": line.removeprefix("error: "), "exit_code": 2}  # nothing else
    assert line.startswith(f"error: {said.format(path=path)}, which a model file must not do")


def test_sys_exit_in_forward_is_exit_2_naming_the_file(cli, tmp_path):
    path = tmp_path / "exits_in_forward.py"
    path.write_text(HANDWRITTEN.replace("def build(", "def _build(") + (
        "\n\ndef build():\n    import sys\n    module, kwargs = _build()\n"
        "    module.register_forward_pre_hook(lambda *_: sys.exit(0))\n    return module, kwargs\n"))
    result = cli("analyze", "--model-file", f"{path}:build", "--op", "rmsnorm", "--json", "--workdir",
                 str(tmp_path / "ws"), cwd=tmp_path)
    assert result.exit_code == 2
    [line] = result.stderr.splitlines()
    assert json.loads(result.stdout) == {"error": line.removeprefix("error: "), "exit_code": 2}  # nothing else
    assert line.startswith("error: exits_in_forward.py:build (")
    assert "the model's forward called sys.exit(0) at " in line and ", which a model must not do" in line


def test_sys_exit_in_a_plain_forward_is_exit_2_naming_the_line(cli, tmp_path):
    # profile's first forward is a plain one (analyze's is recorded): the same policy, naming where sys.exit was called
    path = tmp_path / "exits_in_forward.py"
    path.write_text(HANDWRITTEN.replace("def build(", "def _build(") + (
        "\n\ndef build():\n    import sys\n    module, kwargs = _build()\n"
        "    module.register_forward_pre_hook(lambda *_: sys.exit(0))\n    return module, kwargs\n"))
    line_of_exit = path.read_text().splitlines().index(
        "    module.register_forward_pre_hook(lambda *_: sys.exit(0))") + 1
    result = cli("profile", "--model-file", f"{path}:build", "--mode", "eager", "--out", str(tmp_path / "prof"),
                 cwd=tmp_path)
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (  # the model step's policy names the model, the stage and the line
        f"error: exits_in_forward.py:build (Block): the model's forward called sys.exit(0) at {path}:{line_of_exit}, "
        "which a model must not do — a model must return, not end the process; remove the call")


def test_a_forward_that_compiles_part_of_itself_is_recorded(cli, tmp_path):
    """flex_attention's eager path runs torch.compile inside the forward; dynamo then traces the recorder's torch
    function mode too, which must step aside (it was an internal error), and the norms around it are still found."""
    model = Path(__file__).resolve().parent / "data" / "flex_attention_model.py"
    result = cli("analyze", "--model-file", f"{model}:build", "--op", "rmsnorm", "--json",
                 "--workdir", str(tmp_path / "ws"), cwd=tmp_path)
    assert result.exit_code == 0, result.stderr[-2000:]
    (rms,) = json.loads(result.stdout)["ops"]
    assert rms["present"] and rms["site_count"] == 2
    assert {s["path"] for i in rms["implementations"] for s in i["sites"]} == {"norm_q", "norm_k"}
