"""The target's own Triton kernels under Triton's interpreter (the NPU's branch of MindIE-SD 3.1.0's layer files),
judged against the tree's torch fallback on the shapes each was written for and on each shape that breaks it; and
the documented contracts of the compiled fused ops, on a passing and a failing input."""

import re

import pytest
import torch

from sdcompile.core.npu.emulation import triton_runtime
from sdcompile.core.npu.emulation.contracts import ContractViolation, contract_of
from sdcompile.core.npu.kernel_check import KernelVerdict, check_call, fused_op


@pytest.fixture(scope="module")
def tree_layers(mindiesd_cache, tmp_path_factory):
    """The tree's layer files imported under the emulated NPU (their Triton branch on)."""
    from sdcompile.core.target.discovery import find_target
    from sdcompile.core.target.loader import load_target
    from sdcompile.core.target.package_cache import scratch_copy

    target = load_target(find_target(scratch_copy(tmp_path_factory.mktemp("target") / "mindiesd-3.1.0")))
    assert all(m.ok for m in target.layers), target.layers
    return target


def _randn(*shape, seed=0, dtype=torch.float32):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def _check(name, *args):
    return check_call(fused_op(name), args, {})


def test_the_interpreter_runs_and_the_tree_takes_its_npu_branch(tree_layers):
    runtime = triton_runtime.status()
    assert runtime is not None and runtime.runs_npu_kernels, runtime
    assert runtime.triton.split()[0] in triton_runtime.DISTRIBUTIONS
    import sys

    utils = sys.modules["mindiesd.layers.triton_utils"]
    assert utils._TRITON_ON_ASCEND and utils.get_vectorcore_num() == 48
    assert sys.modules["mindiesd.layers.residual_gate_add"]._TRITON_ON_ASCEND  # the emulated Atlas A2's vector cores
    from sdcompile.core.npu.device import current

    assert current().runs_npu_kernels and "interpreter" in current().npu_kernels


# --- each kernel on the shapes it was written for: launched, and equal to the tree's torch fallback ---------------
WRITTEN_FOR = {
    "mindiesd::residual_gate_add": lambda: (_randn(2, 24, 64), _randn(2, 24, 64, seed=1), _randn(2, 1, 64, seed=2)),
    "mindiesd::scale_shift": lambda: (_randn(1, 24, 64), _randn(24, 64, seed=1), _randn(24, 64, seed=2)),
    "mindiesd::muls_add": lambda: (_randn(2, 24, 64), _randn(2, 24, 64, seed=1), 0.5),
    "mindiesd::gather_scale_shift": lambda: (_randn(1, 10, 64), _randn(3, 64, seed=1), _randn(3, 64, seed=2),
                                             torch.tensor([0, 1, 2, 2, 1, 0, 0, 1, 2, 0])),
    "mindiesd::gather_residual_gate": lambda: (_randn(1, 10, 64), _randn(1, 10, 64, seed=1), _randn(3, 64, seed=2),
                                               torch.tensor([2, 1, 0, 0, 1, 2, 2, 1, 0, 1])),
    "mindiesd::swiglu": lambda: (_randn(12, 128),),
}


@pytest.mark.parametrize("name", sorted(WRITTEN_FOR))
def test_each_tree_kernel_matches_its_fallback_on_its_own_shapes(tree_layers, name):
    check = _check(name, *WRITTEN_FOR[name]())
    assert check.verdict is KernelVerdict.PASSES, check
    assert check.kernels and all(k.endswith("_kernel") for k in check.kernels)


def test_every_tree_op_has_a_case_here():
    from sdcompile.core.npu.emulation.ops import fused_op_table

    assert set(WRITTEN_FOR) == {op.name for op in fused_op_table() if op.registered_by}


# --- the shapes that break them ------------------------------------------------------------------------------------
def test_residual_gate_with_the_gate_bound_as_y_raises_the_kernels_error(tree_layers):
    # Qwen-Image's `hidden + img_gate1 * img_attn_output` as WanResidualGatePattern binds it: y is the [B,1,D] gate
    check = _check("mindiesd::residual_gate_add", _randn(1, 16, 64), _randn(1, 1, 64), _randn(1, 16, 64))
    assert check.verdict is KernelVerdict.RAISES
    assert check.message.startswith("ValueError: x and y must have the same shape")
    assert [o.shape for o in check.operands] == [(1, 16, 64), (1, 1, 64), (1, 16, 64)]


def test_residual_gate_with_a_per_token_gate_differs_from_its_meaning(tree_layers):
    # the kernel reads the gate at (row // S) * D: a [B,S,D] gate is read as [B,1,D]
    x, y, gate = _randn(2, 32, 64), _randn(2, 32, 64, seed=1), _randn(2, 32, 64, seed=2)
    check = _check("mindiesd::residual_gate_add", x, y, gate)
    assert check.verdict is KernelVerdict.DIFFERS and check.kernels == ("residual_gate_add_kernel",)
    assert check.worst.abs_error > 1.0 and check.worst.index[1] > 0  # wrong from the second token on
    expected = x + y * gate
    assert abs(check.worst.reference - float(expected[check.worst.index])) < 1e-4


def test_residual_gate_on_a_non_3d_input_falls_back_with_its_print(tree_layers):
    check = _check("mindiesd::residual_gate_add", _randn(16, 64), _randn(16, 64, seed=1), _randn(1, 64, seed=2))
    assert check.verdict is KernelVerdict.FALLS_BACK and not check.kernels
    assert check.message.startswith("[residual_gate_add] fallback (ndim)")


def test_scale_shift_with_broadcast_modulation_reads_past_its_operands(tree_layers):
    # scale_shift reads scale and shift flat with x's offsets: [B,1,D] modulation holds too few elements
    check = _check("mindiesd::scale_shift", _randn(2, 16, 64), _randn(2, 1, 64, seed=1), _randn(2, 1, 64, seed=2))
    assert check.verdict is KernelVerdict.DIFFERS
    assert "scale_shift_kernel loads" in check.message and "past scale_ptr (128 elements)" in check.message


def test_muls_add_refuses_unequal_shapes(tree_layers):
    check = _check("mindiesd::muls_add", _randn(2, 24, 64), _randn(1, 24, 64), 2.0)
    assert check.verdict is KernelVerdict.RAISES and "same shape" in check.message


def test_gather_scale_shift_above_its_block_limit_falls_back_silently(tree_layers):
    d = 16384 * 2  # _MAX_BLOCK in scale_shift.py is 16384 elements
    check = _check("mindiesd::gather_scale_shift", _randn(1, 2, d), _randn(3, d, seed=1), _randn(3, d, seed=2),
                   torch.tensor([0, 1]))
    assert check.verdict is KernelVerdict.FALLS_BACK and "no Triton kernel launched" in check.message


def test_row_kernels_take_widths_that_are_no_power_of_two_as_triton_ascend_does(tree_layers):
    # upstream Triton refuses tl.arange(0, 96); triton-ascend drops that check, and MindIE-SD's row kernels rely on it
    # (BLOCK_D = D = 5376 on MiniMax-H3)
    assert _check("mindiesd::swiglu", _randn(4, 192)).verdict is KernelVerdict.PASSES  # F = 96
    gathered = _check("mindiesd::gather_scale_shift", _randn(1, 7, 96), _randn(3, 96, seed=1), _randn(3, 96, seed=2),
                      torch.tensor([0, 1, 2, 0, 1, 2, 0]))
    assert gathered.verdict is KernelVerdict.PASSES and gathered.kernels == ("gather_scale_shift_kernel",)


def test_an_out_of_bounds_access_is_masked_and_recorded(tree_layers):
    import triton
    import triton.language as tl

    @triton.jit
    def read_past(src, dst, n: tl.constexpr):
        offs = tl.arange(0, n)
        tl.store(dst + offs, tl.load(src + offs))

    src, dst = torch.arange(4, dtype=torch.float32), torch.zeros(8)
    with triton_runtime.recording() as rec:
        read_past[(1,)](src, dst, 8)
    assert [(o.access, o.elements, o.operand, o.operand_elements) for o in rec.out_of_bounds] == [
        ("load", 4, "src", 4)]
    assert dst.tolist() == [0, 1, 2, 3, 0, 0, 0, 0]  # the lanes past src read nothing (masked), never foreign memory


# --- the compiled ops' contracts -------------------------------------------------------------------------------------
CONTRACT_CASES = [
    # (op, passing args, failing args, words of the failure)
    ("npu::npu_rotary_mul", (_randn(2, 8, 4, 64), _randn(1, 8, 1, 64), _randn(1, 8, 1, 64)),
     (_randn(2, 8, 4, 64), _randn(1, 1, 1, 64), _randn(1, 1, 1, 64)), "is not a form the op broadcasts"),
    ("npu::npu_rotary_mul", (_randn(1, 4, 16, 128), _randn(1, 1, 16, 128), _randn(1, 1, 16, 128)),
     (_randn(4, 16, 128), _randn(16, 128), _randn(16, 128)), "x must have 4 dimensions"),
    ("npu::npu_rotary_mul", (_randn(1, 4, 16, 64), _randn(1, 1, 16, 64), _randn(1, 1, 16, 64)),
     (_randn(1, 4, 16, 1024), _randn(1, 1, 16, 1024), _randn(1, 1, 16, 1024)), "must be below 896"),
    # 'interleave' takes only tables broadcast over B and N (11SD, 1S1D, S11D); 'half' also per-batch ones (B1SD)
    ("npu::npu_rotary_mul", (_randn(2, 8, 4, 64), _randn(1, 1, 4, 64), _randn(1, 1, 4, 64), "interleave"),
     (_randn(2, 8, 4, 64), _randn(2, 1, 4, 64), _randn(2, 1, 4, 64), "interleave"), "is not a form the op broadcasts"),
    # 'half': B and N below 1000 in the layout the tables name (1S1D: BSND, so N is x's third dimension)
    ("npu::npu_rotary_mul", (_randn(1, 2048, 2, 8), _randn(1, 2048, 1, 8), _randn(1, 2048, 1, 8)),
     (_randn(1, 4, 1024, 8), _randn(1, 4, 1, 8), _randn(1, 4, 1, 8)), "must have B below 1000, N below 1000"),
    # 'interleave': B*N below 1000
    ("npu::npu_rotary_mul", (_randn(2, 400, 4, 8), _randn(1, 1, 4, 8), _randn(1, 1, 4, 8), "interleave"),
     (_randn(3, 400, 4, 8), _randn(1, 1, 4, 8), _randn(1, 1, 4, 8), "interleave"), "must have B*N below 1000"),
    # gamma in x's dtype or float32: a float32 x with a bfloat16 gamma is refused
    ("npu::npu_rms_norm", (_randn(2, 8, 64, dtype=torch.bfloat16), _randn(64)),
     (_randn(2, 8, 64), _randn(64, dtype=torch.bfloat16)), "x float32 with gamma bfloat16 is not a combination"),
    ("npu::npu_rms_norm", (_randn(2, 8, 64), _randn(64)), (_randn(2, 8, 64), _randn(32)),
     "must equal the last dimensions of x"),
    ("npu::npu_fast_gelu", (_randn(4, 8, dtype=torch.bfloat16),), (_randn(4, 8, dtype=torch.float64),),
     "x must be float16, bfloat16, float32"),
    ("mindiesd::adaln", (_randn(2, 8, 64), _randn(2, 64), _randn(2, 64)), (_randn(16, 64), _randn(2, 64),
                                                                            _randn(2, 64)), "x must have 3 dimensions"),
    # per-token modulation reaches the op as rows ([B*S, 1, H] with [B*S, H]), never as [B, S, H]
    ("mindiesd::adaln", (_randn(2, 8, 64), _randn(2, 1, 64), _randn(2, 1, 64)),
     (_randn(2, 8, 64), _randn(2, 8, 64), _randn(2, 8, 64)), "is not a form the op broadcasts"),
    ("mindiesd::adaln", (_randn(16, 1, 64), _randn(16, 64), _randn(16, 64)),
     (_randn(2, 8, 64), _randn(1, 64), _randn(1, 64)), "must match x (2, 8, 64) in dimensions 0 (x 0)"),
]


@pytest.mark.parametrize("case", CONTRACT_CASES, ids=[f"{c[0]}-{c[3][:20]}" for c in CONTRACT_CASES])
def test_each_contract_on_a_passing_and_a_failing_input(case):
    name, good, bad, words = case
    op = fused_op(name)
    assert check_call(op, good, {}).verdict is KernelVerdict.PASSES
    failed = check_call(op, bad, {})
    assert failed.verdict is KernelVerdict.RAISES and words in failed.message, failed.message
    assert failed.contract.startswith("documented (") and "source" not in failed.contract
    packet = getattr(getattr(torch.ops, op.namespace), op.op_name)
    with pytest.raises(ContractViolation, match=re.escape(words.split(" (")[0][:25])):
        packet(*bad)


def test_an_op_without_a_documented_contract_says_so():
    geglu = check_call(fused_op("npu::npu_geglu"), (_randn(2, 8),), {})
    assert geglu.verdict is KernelVerdict.PASSES and geglu.contract.startswith("unknown (")
    assert not contract_of("npu::npu_fusion_attention").known


def test_every_compiled_op_states_a_contract_or_that_it_is_unknown():
    from sdcompile.core.npu.emulation.ops import fused_op_table

    casts = {"npu::npu_dtype_cast", "npu::_npu_dtype_cast"}
    for op in fused_op_table():
        if op.emulated and op.name not in casts:
            assert contract_of(op.name) is not None and contract_of(op.name).source, op.name


def test_triton_imported_before_the_emulation_still_interprets(tmp_path):
    # torch's inductor imports triton when a torch behaviour is probed before any device is activated
    import subprocess
    import sys

    code = ("import triton, triton.language as tl\n"
            "from sdcompile.core.npu.device import activate\n"
            "from sdcompile.core.npu.emulation import triton_runtime\n"
            "activate('emulated')\n"
            "import sys\n"
            "print(triton_runtime.status().runs_npu_kernels, type(sys.modules['triton.language'].cdiv).__name__)\n")
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("TRITON_INTERPRET", "SDCOMPILE_DEVICE")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "InterpretedFunction"]
