"""Every catalog is checked against its declared schema when loaded: a malformed one is exit 2 naming the file, the
entry and the field, never a KeyError deep in a caller."""

from __future__ import annotations

import shutil
import tomllib
from importlib import resources
from pathlib import Path

import pytest

from sdcompile.catalogs import CATALOG_DIR_ENV, load
from sdcompile.catalogs.schemas import SCHEMAS
from sdcompile.catalogs.validate import CatalogError, check
from sdcompile.core.ops import OPS
from sdcompile.util.errors import EXIT_BAD_INPUT

_FOLDER = resources.files("sdcompile.catalogs")
OP_FILES = sorted(f"ops/{p.name.removesuffix('.toml')}" for p in _FOLDER.joinpath("ops").iterdir()
                  if p.name.endswith(".toml"))
SHIPPED = sorted(p.name.removesuffix(".toml") for p in _FOLDER.iterdir() if p.name.endswith(".toml")) + OP_FILES


def _shipped(name: str) -> dict:
    return tomllib.loads(_FOLDER.joinpath(*f"{name}.toml".split("/")).read_text(encoding="utf-8"))


def _schema(name: str):
    return SCHEMAS[name.split("/")[0]]  # every ops/<op> file has the "ops" schema


def test_every_shipped_catalog_has_a_schema_and_validates():
    assert {name.split("/")[0] for name in SHIPPED} == set(SCHEMAS)
    for name in SHIPPED:
        check(_shipped(name), _schema(name), f"catalogs/{name}.toml", "fix it")
        assert load(name) == _shipped(name)


def test_there_is_one_op_file_per_op_and_each_names_itself():
    assert OP_FILES == sorted(f"ops/{op}" for op in OPS)
    assert all(_shipped(f"ops/{op}")["name"] == op for op in OPS)
    recipes = [key for op in OPS for key in _shipped(f"ops/{op}").get("recipe", {})]
    assert len(recipes) == len(set(recipes)), "a recipe form's key names one form of one op"


def _drop(*path):
    def mutate(data):
        *parents, last = path
        for key in parents:
            data = data[key]
        del data[last]
    return mutate


def _set(value, *path):
    def mutate(data):
        *parents, last = path
        for key in parents:
            data = data[key]
        data[last] = value
    return mutate


@pytest.mark.parametrize(("name", "mutate", "message"), [
    ("fused_ops", _drop("op", 3, "name"), 'catalogs/fused_ops.toml: op[3] has no "name" (a string)'),
    ("fused_ops", _set(3, "op", 0, "schema"),
     'catalogs/fused_ops.toml: op[0] (npu::npu_rms_norm) has "schema" = an integer, where a string belongs'),
    ("fused_ops", _drop("op"), 'catalogs/fused_ops.toml has no "op" (an array of tables)'),
    ("fused_ops", _set("x", "emulated_device", "soc_version"),
     'catalogs/fused_ops.toml: emulated_device has "soc_version" = a string, where an integer belongs'),
    ("backends", _set({}, "backend"),
     "catalogs/backends.toml: backend is a table, not an array of tables ([[backend]])"),
    ("backends", _set("yes", "backend", 0, "emulated"),
     'catalogs/backends.toml: backend[0] (default) has "emulated" = a string, where a boolean belongs'),
    ("ops/rmsnorm", _drop("recipe", "rmsnorm", "graph_call", "op"),
     'catalogs/ops/rmsnorm.toml: recipe.rmsnorm.graph_call has no "op" (a string)'),
    ("ops/rmsnorm", _drop("recipe", "rmsnorm", "constants", "epsilon", "arg"),
     'catalogs/ops/rmsnorm.toml: recipe.rmsnorm.constants.epsilon has no "arg" (an integer)'),
    ("ops/rope", _drop("anchors", "anchors"), 'catalogs/ops/rope.toml: anchors has no "anchors" (an array)'),
    ("ops/gelu", _set("FastGelu", "kernels", "fused_types"),
     'catalogs/ops/gelu.toml: kernels has "fused_types" = a string, where an array belongs'),
    ("mismatches", _drop("type", 0, "cause", 0, "when"),
     'catalogs/mismatches.toml: type[0].cause[0] (form) has no "when" (a string)'),
    ("zoo", _drop("model", "flux", "class"), 'catalogs/zoo.toml: model.flux has no "class" (a string)'),
    ("topics", _set(1, "topic", "api"), "catalogs/topics.toml: topic.api is an integer, not a table"),
])
def test_a_malformed_catalog_names_file_entry_and_field(name, mutate, message):
    data = _shipped(name)
    mutate(data)
    with pytest.raises(CatalogError) as err:
        check(data, _schema(name), f"catalogs/{name}.toml", "fix it")
    assert err.value.message == message
    assert err.value.exit_code == EXIT_BAD_INPUT


def test_an_optional_field_may_be_absent_but_not_of_another_type():
    data = _shipped("fused_ops")
    data["op"][0].pop("kernel", None)
    check(data, SCHEMAS["fused_ops"], "fused_ops.toml", "fix it")
    data["op"][0]["kernel"] = ["not", "a", "string"]
    with pytest.raises(CatalogError, match='has "kernel" = an array, where a string belongs'):
        check(data, SCHEMAS["fused_ops"], "fused_ops.toml", "fix it")


@pytest.fixture
def catalog_copy(tmp_path, monkeypatch) -> Path:
    """A copy of the shipped catalogs that `load()` reads (through $SDCOMPILE_CATALOG_DIR) for this test only."""
    folder = tmp_path / "catalogs"
    folder.mkdir()
    (folder / "ops").mkdir()
    for name in SHIPPED:
        shutil.copyfile(str(_FOLDER.joinpath(*f"{name}.toml".split("/"))), folder / f"{name}.toml")
    monkeypatch.setenv(CATALOG_DIR_ENV, str(folder))
    load.cache_clear()
    yield folder
    monkeypatch.delenv(CATALOG_DIR_ENV)
    load.cache_clear()


def test_load_reads_the_catalog_dir_hook_and_names_the_file(catalog_copy):
    path = catalog_copy / "backends.toml"
    path.write_text(path.read_text(encoding="utf-8").replace('name = "default"', 'nam = "default"', 1),
                    encoding="utf-8")
    with pytest.raises(CatalogError) as err:
        load("backends")
    assert err.value.message == f'{path}: backend[0] has no "name" (a string)'
    assert CATALOG_DIR_ENV in err.value.fix


def test_a_catalog_that_is_not_toml_is_bad_input(catalog_copy):
    (catalog_copy / "topics.toml").write_text("[topic\n", encoding="utf-8")
    with pytest.raises(CatalogError, match=r"topics.toml is not valid TOML"):
        load("topics")


def test_a_missing_catalog_under_the_hook_is_bad_input(catalog_copy):
    (catalog_copy / "topics.toml").unlink()
    with pytest.raises(Exception) as err:
        load("topics")
    assert getattr(err.value, "exit_code", None) == EXIT_BAD_INPUT
    assert "topics.toml" in str(err.value)


def test_the_cli_exits_2_naming_the_broken_catalog(catalog_copy, cli):
    path = catalog_copy / "backends.toml"
    path.write_text(path.read_text(encoding="utf-8").replace("requires = [", "requires = 1 #[", 1), encoding="utf-8")
    result = cli("backends", env={CATALOG_DIR_ENV: str(catalog_copy)})
    assert result.exit_code == EXIT_BAD_INPUT, result.stderr
    assert f'{path}: backend[0] (default) has "requires" = an integer, where an array belongs' in result.stderr
    assert "Traceback" not in result.stderr


def test_a_broken_op_file_is_bad_input_naming_it_where_a_phase_reads_it(catalog_copy):
    from sdcompile.core.profiles.catalog import load_catalog

    path = catalog_copy / "ops" / "rope.toml"
    path.write_text(path.read_text(encoding="utf-8").replace("radius = 6", 'radius = "six"', 1), encoding="utf-8")
    with pytest.raises(CatalogError) as err:
        load_catalog()  # the kernel catalog reads every op's file
    assert err.value.message == f'{path}: anchors has "radius" = a string, where an integer belongs'
    assert err.value.exit_code == EXIT_BAD_INPUT
