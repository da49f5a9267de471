"""Fuzzed names, paths, kernel CSV cells and profile JSON never make sdcompile exit 70 (a bug): whatever the user
passes is a result (0, 1) or one line saying what to fix (2). The commands run in-process (typer's CliRunner) on
inputs that stop before any model is built; examples are fixed (derandomize) so CI sees the same ones every run."""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

DATA = Path(__file__).resolve().parent / "profiles" / "data" / "level0_shapes"
EAGER, COMPILE = DATA / "eager", DATA / "compile"

FUZZ = settings(max_examples=50, derandomize=True, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow])


def _invoke(*args: str):
    from sdcompile.cli.app import app

    return CliRunner().invoke(app, [str(a) for a in args])


def _assert_documented(result, *codes: int) -> None:
    """Exit code one of `codes` (never 70); exit 2 is one line naming the problem after `error:`, or the CLI
    framework's usage error (a value it cannot convert, such as a path with a NUL byte)."""
    assert result.exit_code in codes, (result.exit_code, result.stderr[-2000:], result.exception)
    if result.exit_code == 2 and not result.stderr.startswith("Usage: "):
        lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
        assert len(lines) == 1, result.stderr


@contextmanager
def _playground():
    """A fresh folder holding the awkward things a path may run into: a file, a read-only folder, a FIFO."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "file").write_text("keep me\n")
        (root / "ro").mkdir(mode=0o555)
        os.mkfifo(root / "fifo")
        try:
            yield root
        finally:
            (root / "ro").chmod(0o755)


# --- names and paths -------------------------------------------------------------------------------------------------
# Any text but surrogates (which no command line can carry), with the characters that broke things before weighted in.
TEXT = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=st.sampled_from('ab_-. /\\"\'\n\t\r\x00\x7f:é€$`;#'), max_size=20),
    st.sampled_from(["a" * 300, "é" * 200, "-", "--help", "", " ", ".", "__init__", "import os", '"""', "x\ny"]),
)
SEGMENT = st.one_of(st.sampled_from(["file", "ro", "fifo", "new", ".", "", "a" * 300]), TEXT)
REL_PATH = st.lists(SEGMENT, min_size=1, max_size=4).map("/".join).filter(lambda p: ".." not in p.split("/"))


def _under(root: Path, rel: str) -> str:
    return f"{root}/{rel}"  # a string join: an absolute `rel` must not escape the playground


@FUZZ
@given(rel=REL_PATH)
def test_a_fuzzed_workdir_is_a_result_or_exit_2(rel):
    with _playground() as root:
        workdir = _under(root, rel)
        _assert_documented(_invoke("copy-audit", EAGER, COMPILE, "--model", "flux", "--op", "rmsnorm",
                                   "--workdir", workdir, "--json"), 0, 2)
        _assert_documented(_invoke("status", "--workdir", workdir, "--json"), 0, 2)
        assert (root / "file").read_text() == "keep me\n"


@FUZZ
@given(rel=REL_PATH, force=st.booleans())
def test_a_fuzzed_html_report_path_is_a_result_or_exit_2(rel, force):
    with _playground() as root:
        html = _under(root, rel)
        args = ["copy-audit", EAGER, COMPILE, "--html", html, *(["--force"] if force else [])]
        _assert_documented(_invoke(*args), 0, 2)
        assert (root / "fifo").is_fifo()  # --force replaces a regular file only
        assert force or (root / "file").read_text() == "keep me\n"


@FUZZ
@given(rel=REL_PATH, factory=TEXT)
def test_a_fuzzed_model_file_path_is_exit_2(rel, factory):
    with _playground() as root:  # no model file exists there: every example stops before a model is built
        spec = f"{_under(root, rel)}.py:{factory}"
        _assert_documented(_invoke("analyze", "--model-file", spec, "--workdir", root / "ws"), 2)
        _assert_documented(_invoke("run", "--model-file", spec, "--name", "m", "--workdir", root / "ws"), 2)


@FUZZ
@given(name=TEXT, op=st.one_of(st.just("rmsnorm"), TEXT))
def test_fuzzed_names_are_exit_2_when_there_is_no_tree(name, op):
    with _playground() as root:  # no MindIE-SD tree: a name that passes its checks meets the missing tree
        common = ("--repo", root / "no-tree", "--workdir", root / "ws")
        _assert_documented(_invoke("scaffold", "--model", "flux", "--op", op, "--name", name, *common), 2)
        _assert_documented(_invoke("register", "--model", "flux", "--op", op, "--module", name, *common), 2)


@FUZZ
@given(model=TEXT, op=st.one_of(st.none(), TEXT), attn=st.one_of(st.none(), TEXT))
def test_fuzzed_copy_audit_options_are_a_result_or_exit_2(model, op, attn):
    with _playground() as root:
        args = ["copy-audit", EAGER, COMPILE, "--model", model, "--workdir", root / "ws"]
        args += [*(["--op", op] if op is not None else []), *(["--attn", attn] if attn is not None else [])]
        _assert_documented(_invoke(*args), 0, 2)


@FUZZ
@given(text=st.text(max_size=300))
def test_writable_dir_raises_only_bad_input(text):
    from sdcompile.util.errors import BadInput
    from sdcompile.util.input_checks import writable_dir

    with _playground() as root:
        try:
            writable_dir(_under(root, text) if ".." not in text else root / "x", "--workdir")
        except BadInput as exc:
            assert "\n" not in exc.one_line()


# --- kernel CSV cells and the JSON beside them -----------------------------------------------------------------------
HEADERS = [
    ["Name", "Type", "Accelerator Core", "Start Time(us)", "Duration(us)", "Wait Time(us)", "Block Dim"],
    ["Step Id", "Device_id", "Name", "Type", "Accelerator Core", "Start Time(us)", "Duration(us)", "Input Shapes"],
    ["Device_id", "Op Name", "OP Type", "Task Type", "Task Start Time(us)", "Task Duration(us)"],
    ["Name", "Duration(us)"],
]
NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-(10**20), max_value=10**20).map(str),
    st.decimals(allow_nan=False, allow_infinity=False, places=4).map(str),
    st.sampled_from(["1718873628000000.000\t", '"1718873628000053.223\t"', "1.69512E+15", "1e400", "-0", "0x10"]),
)
CELL = st.one_of(
    NUMBERS,
    st.sampled_from(["N/A", "n/a", "NA", "", '"', '""', '"""81920,4096"""', "\t", "AI_CORE", "AI_CPU", "CPU",
                     "aclnnInplaceCopy_TensorMoveAiCore_TensorMove", "TensorMove", "ViewCopy", "MatMulV3"]),
    st.text(max_size=12),
)


# What each column usually holds, so most rows reach the aggregation and the audit; any cell may still be junk.
KERNELS = ["aclnnInplaceCopy_TensorMoveAiCore_TensorMove", "aclnnInplaceCopy_ViewCopyAiCore_ViewCopy",
           "aclnnMatmul_MatMulV3Common_MatMulV3", "aclnnStridedSliceV2_StridedSliceAiCore_StridedSlice",
           "hcom_allReduce__123_1_1", "LayerNorm90", "aten::copy_", ""]
COLUMN = {
    "Name": st.sampled_from(KERNELS) | st.text(max_size=10), "Op Name": st.sampled_from(KERNELS),
    "Type": st.sampled_from(["TensorMove", "ViewCopy", "MatMulV3", "StridedSlice", "N/A", "", "Cast"]),
    "OP Type": st.sampled_from(["TensorMove", "ViewCopy", "MatMulV3", "N/A"]),
    "Accelerator Core": st.sampled_from(["AI_CORE", "AI_VECTOR_CORE", "MIX_AIC", "AI_CPU", "CPU", "N/A", "HCCL"]),
    "Start Time(us)": st.integers(0, 2**62).map(lambda n: f"{n // 1000}.{n % 1000:03d}\t") | NUMBERS,
    "Duration(us)": st.floats(0, 1e6).map(lambda f: f"{f:.3f}") | NUMBERS,
    "Step Id": st.integers(-1, 3).map(str) | st.just("N/A"),
}


@st.composite
def kernel_csv(draw) -> bytes:
    header = draw(st.sampled_from(HEADERS))
    if draw(st.integers(0, 3)) == 0:  # a header with a column dropped, repeated or renamed
        header = list(header)
        header[draw(st.integers(0, len(header) - 1))] = draw(st.one_of(st.sampled_from(header), st.text(max_size=8)))

    tidy = draw(st.booleans())  # half the files hold only usual cells: they get through to the audit

    def cell(column: str):
        usual = COLUMN.get(column.replace("Task ", ""), CELL)
        return usual if tidy else st.one_of(usual, usual, usual, CELL)

    def row():
        exact = st.tuples(*(cell(c) for c in header)).map(list)
        ragged = st.lists(CELL, min_size=max(len(header) - 1, 0), max_size=len(header) + 1)
        return exact if tidy else st.one_of(exact, exact, exact, exact, ragged)

    rows = draw(st.lists(row(), min_size=0, max_size=8))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    if draw(st.booleans()):  # quoted as a CSV writer would
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator=newline).writerows([header, *rows])
        text = buffer.getvalue()
    else:  # joined raw, as a hand edit or a cut-short export leaves it
        text = newline.join(",".join(cells) for cells in [header, *rows]) + newline
    data = text.encode("utf-8", "surrogatepass")
    if draw(st.booleans()):
        data = b"\xef\xbb\xbf" + data
    if not tidy and draw(st.integers(0, 9)) == 0:  # bytes that are not UTF-8
        data = data.replace(b"a", b"\xff", 1) + b"\xc3("
    return data


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=8)
CAPTURE_NOTE = st.one_of(
    st.none(),  # no note: an NPU-shaped folder
    st.dictionaries(st.sampled_from(["source", "device", "steps", "rows", "pattern_hits", "pass_log_counts", "mode"]),
                    JSON, max_size=4).map(json.dumps),
    JSON.map(json.dumps),
    st.binary(max_size=20).map(lambda b: b.decode("latin-1")),
)


def _write_side(root: Path, side: str, data: bytes, layout: str, note: str | None, info: str | None) -> Path:
    if layout == "file":
        path = root / side / "kernel_details.csv"
        path.parent.mkdir(parents=True)
        path.write_bytes(data)
        return path
    run_dir = root / side / f"worker0_41{len(side)}0_20250601101010123_ascend_pt"
    (run_dir / "ASCEND_PROFILER_OUTPUT").mkdir(parents=True)
    (run_dir / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv").write_bytes(data)
    if note is not None:
        (run_dir / "sdcompile_capture.json").write_text(note, encoding="utf-8", errors="surrogatepass")
    if info is not None:
        (run_dir / "profiler_info_0.json").write_text(info, encoding="utf-8", errors="surrogatepass")
    return root / side


@settings(FUZZ, max_examples=100)
@given(eager=kernel_csv(), compiled=st.one_of(st.none(), kernel_csv()), layout=st.sampled_from(["file", "run"]),
       note=CAPTURE_NOTE, info=st.one_of(st.none(), JSON.map(json.dumps)),
       step=st.one_of(st.none(), st.integers(-2, 3)), gate=st.one_of(st.none(), st.floats(0, 10)),
       metric=st.sampled_from(["auto", "time", "count"]))
@example(eager=b"Name,Start Time(us),Duration(us)\nTensorMove,0.000\t,1.0\n0.0,\r0\n", compiled=None, layout="file",
         note=None, info=None, step=None, gate=None, metric="auto")  # a stray CR once broke the start-time probe
@example(eager=b"Device_id,Op Name,OP Type,Task Type,Task Start Time(us),Task Duration(us)\n0.0,"
                b"aclnnInplaceCopy_TensorMoveAiCore_TensorMove,TensorMove,TensorMove,0.000\t,0.000\n",
         compiled=b"Name,Duration(us)\n,0.000\n", layout="file", note=None, info=None, step=None, gate=None,
         metric="auto")  # a row without a name: null in the dictionary-encoded Name column until filled with ""
def test_fuzzed_kernel_csvs_and_their_json_are_a_result_or_exit_2(eager, compiled, layout, note, info, step, gate,
                                                                   metric):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        eager_path = _write_side(root, "eager", eager, layout, note, info)
        compile_path = COMPILE if compiled is None else _write_side(root, "compile", compiled, layout, note, info)
        args = ["copy-audit", eager_path, compile_path, "--inflation-metric", metric, "--json"]
        args += [*(["--step", str(step)] if step is not None else []),
                 *(["--max-inflation", repr(gate)] if gate is not None else [])]
        result = _invoke(*args)
        _assert_documented(result, 0, 1, 2)
        if result.exit_code in (0, 1):
            json.loads(result.stdout)  # a result is one JSON document


@pytest.mark.parametrize("command", ["copy-audit", "benefit"])
@FUZZ
@given(cells=st.lists(CELL, min_size=7, max_size=7), rows=st.integers(1, 3))
def test_one_fuzzed_row_in_a_real_profile_is_a_result_or_exit_2(command, cells, rows):
    """The real fixture with fuzzed rows appended: the cells meet a real header and real neighbours (benefit reads
    the shapes, dtypes and start times of every row)."""
    import shutil

    assume(any(c.strip() for c in cells))
    with tempfile.TemporaryDirectory() as tmp:
        side = shutil.copytree(EAGER, Path(tmp) / "eager")
        [csv_path] = side.glob("*/ASCEND_PROFILER_OUTPUT/kernel_details.csv")
        width = len(csv_path.read_text(encoding="utf-8").splitlines()[0].split(","))
        row = (cells * 3)[:width]
        with open(csv_path, "a", encoding="utf-8", newline="") as fh:
            fh.write(("\r\n".join(",".join(row) for _ in range(rows))) + "\r\n")
        _assert_documented(_invoke(command, side, COMPILE, "--json"), 0, 1, 2)


# --- files in the workspace and the target tree that the user (or an editor, or a crash) may have changed -------------
@st.composite
def edited_state(draw, state: dict) -> str:
    """The state file a real command wrote, with a field or two replaced by any JSON (or the whole file)."""
    if draw(st.integers(0, 5)) == 0:
        return json.dumps(draw(JSON))
    doc = json.loads(json.dumps(state))
    for _ in range(draw(st.integers(1, 2))):
        phases = doc.get("phases") if isinstance(doc, dict) else None  # a first edit may have replaced it
        record = next(iter(phases.values()), None) if isinstance(phases, dict) else None
        where = draw(st.sampled_from(["top", "phases", "record"] if isinstance(record, dict) else ["top", "phases"]))
        target = {"top": doc, "phases": phases, "record": record}[where]
        if not isinstance(target, dict):
            break
        key = draw(st.sampled_from(sorted(target) + ["extra"]))
        target[key] = draw(JSON)
    return json.dumps(doc)


def test_a_fuzzed_state_file_is_a_status_or_exit_2(tmp_path):
    workdir = tmp_path / "ws"
    recorded = _invoke("copy-audit", EAGER, COMPILE, "--model", "flux", "--op", "rmsnorm", "--workdir", workdir)
    assert recorded.exit_code == 0, recorded.stderr
    [state_file] = workdir.glob("*/*/state.json")
    state = json.loads(state_file.read_text(encoding="utf-8"))

    @FUZZ
    @given(text=edited_state(state), as_json=st.booleans())
    def check(text, as_json):
        state_file.write_text(text, encoding="utf-8")
        _assert_documented(_invoke("status", "--workdir", workdir, *(["--json"] if as_json else [])), 0, 2)

    check()


REGISTRATION_FILES = ("mindiesd/compilation/patterns/__init__.py", "mindiesd/compilation/passes/__init__.py",
                      "mindiesd/compilation/compiliation_config.py")


def test_fuzzed_registration_files_are_an_audit_or_exit_2(mindiesd_tree):
    original = {name: (mindiesd_tree / name).read_bytes() for name in REGISTRATION_FILES}

    @FUZZ
    @given(name=st.sampled_from(REGISTRATION_FILES),
           prefix=st.sampled_from([b"", b"\xef\xbb\xbf", b"# -*- coding: latin-1 -*-\n", b"# coding: utf-16\n",
                                   b"\xff"]),
           insert=st.binary(max_size=30) | st.text(max_size=30).map(str.encode), at=st.floats(0, 1),
           cut=st.booleans())
    def check(name, prefix, insert, at, cut):
        data = original[name]
        split = int(len(data) * at)
        (mindiesd_tree / name).write_bytes(prefix + data[:split] + insert + (b"" if cut else data[split:]))
        try:
            _assert_documented(_invoke("register", "--check", "--repo", mindiesd_tree), 0, 1, 2)
        finally:
            (mindiesd_tree / name).write_bytes(original[name])

    check()


@pytest.mark.parametrize("field,value", [("verdict", []), ("verdict", "kept"), ("number", "7"), ("evidence", [3])])
def test_a_state_record_of_the_wrong_type_is_exit_2_naming_the_field(tmp_path, field, value):
    """Found by the fuzz test above: a list for a verdict reached the renderer and crashed it (exit 70)."""
    workdir = tmp_path / "ws"
    recorded = _invoke("copy-audit", EAGER, COMPILE, "--model", "flux", "--op", "rmsnorm", "--workdir", workdir)
    assert recorded.exit_code == 0, recorded.stderr
    [state_file] = workdir.glob("*/*/state.json")
    state = json.loads(state_file.read_text(encoding="utf-8"))
    state["phases"]["copy-audit"][field] = value
    state_file.write_text(json.dumps(state), encoding="utf-8")
    result = _invoke("status", "--workdir", workdir)
    _assert_documented(result, 2)
    assert "is not a valid sdcompile state file" in result.stderr and f"'copy-audit''s {field}" in result.stderr
