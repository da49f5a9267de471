"""The verify renderers: the table, the Markdown report and the JSON document show the same result."""

import json

from rich.console import Console

from sdcompile.core.torchcompat.behaviours import holds
from sdcompile.phases.verify.phase import run_verify
from sdcompile.phases.verify.render import markdown_report, render_verify
from sdcompile.util.serialize import dumps


def test_table_markdown_and_json_of_one_group(target, tmp_path):
    report = run_verify(repo=target.tree.root, workdir=tmp_path, group="MiniMaxH3RmsNormPatternGroup")
    console = Console(record=True, width=220)
    render_verify(console, report)
    table = console.export_text()
    assert "MiniMaxH3RmsNormPattern-torch.bfloat16-3d" in table and "cpu (emulated npu)" in table
    assert "not exercised here" in table
    md = markdown_report(report)
    assert md.startswith("# sdcompile verify") and "| MiniMaxH3RmsNormPatternGroup |" in md
    data = json.loads(dumps(report))
    cases = {c["pattern"]: c for c in data["groups"][0]["unit"]}
    assert cases["MiniMaxH3RmsNormPattern-torch.float32-3d"]["passed"] is True
    bf16 = cases["MiniMaxH3RmsNormPattern-torch.bfloat16-3d"]
    if holds("decomposition-override"):
        # the bf16 variants are replaced through the fp32 variant after an upcast that stays outside the fused op
        assert "replaced by MiniMaxH3RmsNormPattern-torch.float32-3d" in table and "_to_copy.default×1" in table
        assert "FAIL" in table and bf16["graph"]["originals_left"] == {"aten._to_copy.default": 1}
    else:  # registered as written, each variant replaces its own search function, within bf16 tolerance
        assert "PASS" in table and bf16["passed"] is True and bf16["own_hits"] == 1
        assert bf16["numerics"]["dtype"] == "torch.bfloat16" and bf16["numerics"]["outside"] == 0
