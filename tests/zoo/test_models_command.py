"""`sdcompile models`: the zoo and every other diffusers transformer class --model takes; --check builds them."""

from __future__ import annotations

import json

from sdcompile.core.zoo.models import zoo_entries


def test_the_listing_has_the_zoo_and_the_other_classes(cli, tmp_path):
    out = cli("models", "--json", cwd=tmp_path)
    assert out.exit_code == 0, out.stderr
    rows = json.loads(out.stdout)["rows"]
    zoo = [r for r in rows if r["source"] == "zoo"]
    assert [r["name"] for r in zoo] == list(zoo_entries())
    other = {r["class_name"] for r in rows if r["source"] == "diffusers"}
    assert {"CogView4Transformer2DModel", "WanVACETransformer3DModel"} <= other
    assert not other & {r["class_name"] for r in zoo}
    assert all(r["builds"] is None for r in rows)
    assert out.stderr.strip().splitlines()[-1] == (f"PASS {len(rows)} models: {len(zoo)} zoo, {len(other)} diffusers "
                                                   "(--check builds each)")


def test_check_builds_the_named_ones_and_fails_on_one_that_does_not(cli, tmp_path):
    out = cli("models", "CogView4Transformer2DModel", "flux", "QwenImage21Transformer2DModel", "--check", "--json",
              cwd=tmp_path)
    assert out.exit_code == 1, out.stderr
    rows = {r["class_name"]: r for r in json.loads(out.stdout)["rows"]}
    assert rows["FluxTransformer2DModel"]["builds"] and rows["CogView4Transformer2DModel"]["size"] == "tiny config"
    assert rows["QwenImage21Transformer2DModel"]["builds"] is False
    assert "'img_mask'" in rows["QwenImage21Transformer2DModel"]["problem"]
    assert out.stderr.strip().splitlines()[-1] == "FAIL 2 of 3 models build and run a forward"
