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
    assert all(r["checked"] == [] for r in rows)
    assert out.stderr.strip().splitlines()[-1] == (f"PASS: {len(rows)} models: {len(zoo)} zoo, {len(other)} diffusers "
                                                   "(--check builds each)")


def test_check_builds_the_named_ones_at_each_size_and_fails_on_one_that_does_not(cli, tmp_path):
    out = cli("models", "CogView4Transformer2DModel", "QwenImage21Transformer2DModel", "--check", "--json",
              cwd=tmp_path)
    assert out.exit_code == 1, out.stderr
    report = json.loads(out.stdout)
    assert report["sizes"] == ["tiny", "real"] and report["num_layers"] == 1
    rows = {r["class_name"]: {c["size"]: c for c in r["checked"]} for r in report["rows"]}
    cogview = rows["CogView4Transformer2DModel"]
    assert cogview["tiny"]["builds"] and cogview["tiny"]["config"] == "tiny config"
    assert cogview["tiny"]["full_parameters"] is None
    # real: the class's own widths with one block of each kind; the whole real config only counted (meta device)
    assert cogview["real"]["builds"] and cogview["real"]["config"] == "real config, 1 layer"
    assert cogview["tiny"]["parameters"] < cogview["real"]["parameters"] < cogview["real"]["full_parameters"]
    qwen = rows["QwenImage21Transformer2DModel"]
    assert not qwen["tiny"]["builds"] and not qwen["real"]["builds"] and "'img_mask'" in qwen["tiny"]["problem"]
    assert out.stderr.strip().splitlines()[-1] == "FAIL: 1 of 2 models build and run a forward at tiny and real size"


def test_a_real_config_too_large_for_the_memory_allowed_is_said_so_not_built(cli, tmp_path):
    out = cli("models", "WanTransformer3DModel", "--check", "--size", "real", "--num-layers", "40", "--json",
              cwd=tmp_path, env={"SDCOMPILE_MEMORY_GB": "4"})
    assert out.exit_code == 1, out.stderr
    (check,) = json.loads(out.stdout)["rows"][0]["checked"]
    assert not check["builds"] and check["parameters"] is None and check["full_parameters"] > 10**10
    assert "14.3 B parameters" in check["problem"] and "4 GB are available" in check["problem"]
