"""One model step, one error policy: a model whose forward raises is exit 2 naming the model's file and the stage in
every command that runs it, never an internal error; an instrument of sdcompile's that fails where the plain forward
runs is sdcompile's failure, never blamed on the model."""

import json

import pytest

from sdcompile.core.zoo.model_step import ModelRaised, ModelRequest, first_forward, user_code

MODEL = '''
import torch
from torch import nn


class Norm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.linspace(0.5, 1.5, dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight


class Block(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.norm = Norm(dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, hidden_states):
        h = self.proj(self.norm(hidden_states))
        if h.shape[1] % 3:
            raise ValueError(f"sequence length {h.shape[1]} is not a multiple of 3")
        return h


def build():
    torch.manual_seed(0)
    return Block(), {"hidden_states": torch.randn(1, 8, 32)}
'''

RAISES = next(n for n, line in enumerate(MODEL.splitlines(), 1) if "raise ValueError" in line)
SAID = "seq_model.py:build (Block): the model's forward raised ValueError: sequence length 8 is not a multiple of 3"


@pytest.fixture
def model_file(tmp_path):
    path = tmp_path / "seq_model.py"
    path.write_text(MODEL)
    return path


@pytest.mark.parametrize("command", [
    ["analyze", "--op", "rmsnorm"],
    ["scaffold", "--op", "rmsnorm", "--name", "seq", "--dry-run"],
    ["verify", "--op", "rmsnorm", "--all-groups"],
    ["debug", "--op", "rmsnorm"],
    ["integrate", "--op", "rmsnorm"],
    ["run", "--op", "rmsnorm", "--name", "seq"],
    ["profile", "--mode", "eager", "--out", "prof"],
], ids=lambda c: c[0])
def test_a_forward_that_raises_is_exit_2_naming_the_file_and_stage_in_every_command(cli, tmp_path, model_file,
                                                                                     mindiesd_tree, command):
    needs_tree = command[0] != "analyze"
    args = [*command, "--model-file", f"{model_file}:build", "--json"]
    args += ["--repo", str(mindiesd_tree)] if needs_tree else []
    args += [] if command[0] == "profile" else ["--workdir", str(tmp_path / "ws")]
    result = cli(*args, cwd=tmp_path)
    assert result.exit_code == 2, result.stderr[-2000:]
    error = json.loads(result.stdout)["error"]
    assert error.startswith(SAID) and "module(**kwargs)" in error
    assert f"(seq_model.py:{RAISES} in forward)" in error  # where in the model's own code, not torch's
    assert "internal error" not in result.stderr


def test_new_models_written_factory_that_raises_is_exit_2_naming_it(model_file):
    from sdcompile.phases.new_model.phase import _primitives

    with pytest.raises(ModelRaised) as err:
        _primitives(model_file, timeout=0)
    assert err.value.exit_code == 2 and err.value.message.startswith(SAID)


def test_a_failing_instrument_is_sdcompiles_failure_when_the_plain_forward_runs(model_file):
    def recorded_forward(module, inputs):
        raise AttributeError("the recorder lost its frame\n  (a page of torch's own context follows)")

    good = model_file.with_name("seq_ok.py")
    good.write_text(MODEL.replace("randn(1, 8, 32)", "randn(1, 9, 32)"))
    with pytest.raises(RuntimeError) as err:
        first_forward(ModelRequest(model_file=f"{good}:build", dtype="fp32", timeout=0), recorded_forward)
    assert "instrumented forward (recorded_forward) failed" in str(err.value)
    assert str(err.value).endswith("whose plain forward runs: AttributeError: the recorder lost its frame")  # 1 line


def test_a_later_forward_names_its_stage_and_lets_sdcompiles_own_errors_through(model_file):
    good = model_file.with_name("seq_ok.py")
    good.write_text(MODEL.replace("randn(1, 8, 32)", "randn(1, 9, 32)"))
    built, output = first_forward(ModelRequest(model_file=f"{good}:build", dtype="fp32", timeout=0))
    assert output.shape == (1, 9, 32)
    with pytest.raises(ModelRaised) as err, user_code(built, "compiled forward"):
        built.module(hidden_states=built.inputs["hidden_states"][:, :8])
    assert err.value.message.startswith("seq_ok.py:build (Block): the model's compiled forward raised ValueError")
    assert f"seq_ok.py:{RAISES} in forward)" in err.value.message
    from sdcompile.util.errors import BadInput

    with pytest.raises(BadInput) as own, user_code(built):
        raise BadInput("a check of sdcompile's own", "its own fix")
    assert not isinstance(own.value, ModelRaised)


def test_the_model_is_resolved_once_per_request(model_file, monkeypatch):
    import sdcompile.core.zoo.model_step as model_step

    calls = []
    real = model_step.resolve_model
    monkeypatch.setattr(model_step, "resolve_model", lambda *a, **k: calls.append(a) or real(*a, **k))
    request = ModelRequest(model_file=f"{model_file}:build")
    assert request.spec is request.with_dtype("fp32").spec and request.pattern_word("seq") == "seq"
    assert len(calls) == 1
    with pytest.raises(Exception, match="--model-file needs --name"):
        request.pattern_word(None)
