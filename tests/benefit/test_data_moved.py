"""The static half of hit is not gain: what a chain and its replacement move per call, counted op by op as they run
(testing.data_movement), and scaffold flagging a generated replacement that moves more than its chain."""

from __future__ import annotations

import json
import math

import pytest


def test_each_op_reads_its_inputs_once_and_writes_its_output_and_views_move_nothing():
    import torch

    from sdcompile.testing.data_movement import measure

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(2, 64, 32, generator=gen).to(torch.bfloat16)  # 8 KiB
    scale = (0.1 * torch.randn(2, 1, 32, generator=gen)).to(torch.bfloat16)  # 128 B
    x_bytes, scale_bytes = x.numel() * 2, scale.numel() * 2

    def chain(x, scale):  # the modulation as a model writes it: (1 + scale) is small, x * ... is x-sized
        return x * (1 + scale)

    out, moved = measure(chain, x, scale)
    assert torch.equal(out, chain(x, scale))
    # add: reads scale, writes scale-sized; mul: reads x and the small tensor (broadcast: read once), writes x-sized
    assert moved.moved == (scale_bytes + scale_bytes) + (x_bytes + scale_bytes + x_bytes)
    assert moved.ops == 2 and moved.materialised == 0

    def expanded(x, scale):  # the same, with the modulation expanded to x's shape first and made contiguous
        return x * (1 + scale).expand_as(x).contiguous()

    _out, more = measure(expanded, x, scale)
    assert more.materialised == x_bytes  # the copy a kernel reading x's offsets would need
    assert more.moved == moved.moved + (scale_bytes + x_bytes) + (x_bytes - scale_bytes)
    _out, sliced = measure(lambda x: x[..., :16] * 2, x)
    assert sliced.moved == x_bytes // 2 + x_bytes // 2  # a slice reads its own elements, not its base's


def test_a_replacement_that_materialises_x_sized_inputs_is_flagged(tmp_path, mindiesd_tree, cli):
    """Lumina 2's final AdaLN scales without a shift; its generated replacement is
    scale_shift(x, scale.expand(x.shape), zeros_like(x)): a zero tensor of x's size the chain never made."""
    result = cli("scaffold", "--model", "lumina2", "--op", "adaln", "--repo", str(mindiesd_tree), "--dry-run",
                 "--json", "--workdir", str(tmp_path / "ws"), cwd=tmp_path)
    doc = json.loads(result.stdout)
    by_name = {v["name"]: v for v in doc["variants"]}
    flagged = [n for n in doc["numerics"] if n["replacement_bytes"] and n["replacement_bytes"] > n["chain_bytes"]]
    assert flagged, doc["numerics"]
    for n in flagged:
        variant = by_name[n["variant"]]
        x = next(i for i in variant["inputs"] if i["role"] == "x")
        x_bytes = 2 * math.prod(x["shape"])  # bf16
        assert "zeros_like" in variant["replacement"] and n["materialised_bytes"] >= x_bytes
    # the report says so, beside the variant (rendered from the same document, as the command renders its result)
    from sdcompile.phases.scaffold.render import render_scaffold
    from sdcompile.phases.scaffold.results import ScaffoldResult
    from sdcompile.rendering.output import rendered
    from sdcompile.util.serialize import from_jsonable

    text = rendered(render_scaffold, from_jsonable(ScaffoldResult, doc), 200)
    assert "the replacement moves more than the chain, a hit likely to lose (R2, input materialisation)" in \
        " ".join(text.split())


@pytest.mark.parametrize("more", [True, False])
def test_verify_names_a_replacement_that_moves_more(more):
    from rich.console import Console

    from sdcompile.phases.verify.results import DataMoved
    from sdcompile.rendering.data_moved import print_data_moved

    console = Console(width=200, record=True)
    moved = DataMoved(7_100, 17_300 if more else 5_000, 3_456 if more else 0)
    print_data_moved(console, [("Lumina2AdaLnPattern-torch.bfloat16", moved), ("Other", DataMoved(10, 5, 0))])
    text = console.export_text()
    assert ("data moved by Lumina2AdaLnPattern-torch.bfloat16: chain 7.10 KB, replacement 17.30 KB per call (3.46 KB "
            "of it copies, casts or fills the chain never made): the replacement moves more" in text) is more
    assert ("1 of 2 replacement(s)" if more else "2 of 2 replacement(s)") in text
