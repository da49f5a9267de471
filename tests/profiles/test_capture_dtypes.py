"""A CPU capture records each launch's input dtypes as torch_npu's Input Data Types column, on every supported torch
(2.9's FunctionEvent does not carry them; its kineto events do), so integrate can tell a complex RoPE's Mul from
every layer's real ones; a profile warmed up until the compiled model stops compiling starts in steady state."""

from __future__ import annotations

import csv

import torch


def test_a_cpu_capture_records_complex_inputs_and_integrate_counts_them(tmp_path):
    from sdcompile.core.profiles.capture import capture_cpu
    from sdcompile.core.profiles.catalog import load_catalog
    from sdcompile.core.profiles.profile import load_profile

    angles = torch.arange(8, dtype=torch.float32)[:, None] * torch.rand(1, 4)
    table = torch.polar(torch.ones_like(angles), angles)
    x = torch.randn(1, 8, 2, 8)

    def step():
        pairs = torch.view_as_complex(x.reshape(1, 8, 2, 4, 2))
        return torch.view_as_real(pairs * table[:, None]).flatten(3) * 2.0  # one complex Mul, one real

    catalog = load_catalog()
    cap = capture_cpu(step, 2, tmp_path, "complex", {}, catalog)
    with cap.kernel_details.open(newline="") as f:
        muls = [r for r in csv.DictReader(f) if r["Name"] == "aten::mul"]
    assert sorted(r["Input Data Types"].split(";")[0] for r in muls) == ["COMPLEX64", "COMPLEX64", "FLOAT", "FLOAT"]

    profile = load_profile(cap.run_dir, catalog)
    muls = [g for g in profile.groups if g.op_type == "Mul"]  # one group per step
    assert (sum(g.count for g in muls), sum(g.complex_count for g in muls)) == (4, 2)


def test_warm_up_runs_until_the_compiled_model_stops_compiling():
    from sdcompile.phases.profile.warm_up import compiled_frames, warm_up

    class CachesOnFirstCall(torch.nn.Module):
        """Builds a table on its first forward, as diffusers' RoPE embedders cache theirs."""

        def __init__(self):
            super().__init__()
            self.table = None

        def forward(self, x):
            if self.table is None:
                self.table = torch.linspace(0.5, 1.5, x.shape[-1])
                return x * 2
            return x * self.table

    torch._dynamo.reset()
    compiled = torch.compile(CachesOnFirstCall(), backend="eager")
    x = torch.randn(4, 8)
    calls = warm_up(lambda: compiled(x), compiles=True)
    assert calls == 3  # call 1 compiles, call 2 compiles again (the cached table), call 3 compiles nothing
    frames = compiled_frames()
    compiled(x)
    assert compiled_frames() == frames
    assert warm_up(lambda: compiled(x), compiles=True) == 1
    assert warm_up(lambda: None, compiles=False) == 1
