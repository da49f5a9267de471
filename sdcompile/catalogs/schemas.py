"""What each shipped catalog must hold: the tables and the fields (with their types) its callers read.

Data, checked by `sdcompile.catalogs.validate` when `load()` reads a catalog. A field's type is one of the names of
`validate.TYPES` ("string", "integer", "number", "boolean", "array", "table"); a trailing "?" makes it optional (its
type is still checked when present). Fields a caller only reads with a default (`entry.get("x", ...)`) are optional;
fields it indexes (`entry["x"]`) are required. `Rows` is an array of tables (`[[op]]`), `Each` a table of named
tables (`[recipe.rmsnorm]`), `Table` one table with fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Table:
    """One table with `fields` (a field: a type name, or a nested Table/Rows/Each)."""

    fields: Mapping[str, Any]
    optional: bool = False


@dataclass(frozen=True)
class Rows(Table):
    """An array of tables, every row with `fields`."""


@dataclass(frozen=True)
class Each(Table):
    """A table of named tables, every one with `fields`."""


_BEHAVIOUR_TEXTS = {"key": "string", "seen": "string", "applies": "string", "otherwise": "string"}

SCHEMAS: dict[str, Mapping[str, Any]] = {
    "any_model": {
        "geometry": Table({"batch": "integer", "text_tokens": "integer", "text_tokens_fields": "array",
                           "grid": "integer", "frames": "integer", "audio_frames": "integer",
                           "grid_tiled": "integer"}),
        "size": Rows({"name": "string", "rules": "array"}),
        "unset": Rows({"fields": "table", "instead": "boolean?"}),
        "shrink": Each({"fields": "string", "kind": "string", "to": "integer", "layers": "boolean?"}),
        "symbols": "table",
        "role": Rows({"names": "array", "candidates": "array"}),
        "learned": Table({"shapes": "array", "use": "table", "dims": "table"}),
    },
    "backends": {
        "backend": Rows({"name": "string", "title": "string", "entry_point": "string",
                         "aot_functionalization": "string", "mindie_patterns": "string", "capture": "string",
                         "copy_behaviour": "string", "requires": "array", "emulated": "boolean?",
                         "provider": "string", "config_fields": "array",
                         "mode": Rows({"field": "string", "value": "string", "meaning": "string"}, optional=True)}),
    },
    "copy_options": {
        "documented": Table({"release": "string", "source": "string", "fields": "array"}),
        "option": Rows({"id": "string", "title": "string", "when": "string", "mechanism": "string",
                        "caveat": "string?", "requires": "array", "command": "string?",
                        "setting": Rows({"field": "string", "value": "string", "effect": "string"}, optional=True)}),
    },
    "torch_variants": {
        "fallback": Table({"release": "string", "source": "string", "releases": "array"}),
        "sdcompile": Table({"tested": "array", "declared": "string"}),
    },
    "fused_ops": {
        "emulated_device": Table({"name": "string", "device_count": "integer", "soc_version": "integer",
                                   "num_aicore": "integer", "num_vectorcore": "integer"}),
        "op": Rows({"name": "string", "schema": "string", "exposed_as": "array", "npu_kernels": "array",
                    "used_by": "array", "semantics": "string", "kernel": "string?", "fake": "string?",
                    "registered_by": "string?", "approximation_atol": "number?", "rope_tables": "table?",
                    "cast": "boolean?", "npu_branch": "string?", "contract": "table?"}),
    },
    "benefit_causes": {
        "cause": Rows({"code": "string", "title": "string", "evidence": "string", "mechanism": "string",
                       "fix": "string"}),
    },
    "kernel_headers": {
        "aliases": "table",
        "start_time": Table({"canonical": "string", "spellings": "array"}),
        "dtype_bytes": "table",
    },
    # core.profiles.catalog_schema checks the rest of this one (it also reads users' --catalog files)
    "kernels": {
        "family": Rows({"name": "string", "title": "string?", "role": "string?", "op": "string?",
                        "rule": Rows({}, optional=True)}, optional=True),
        "op": Rows({"name": "string", "fused_types": "array"}, optional=True),
        "name_rule": Rows({"regex": "string"}, optional=True),
        "key_rule": Rows({"regex": "string"}, optional=True),
        "sources": "table?", "copy_audit": "table?", "cpu": "table?",
    },
    "mindiesd_standins": {
        "standin": Rows({"module": "string", "file": "string", "package": "boolean", "why": "string",
                         "serves": "string", "exports": "table?"}),
    },
    "mismatches": {
        "families": "table?",
        "type": Rows({"number": "integer", "name": "string", "path": "string", "summary": "string",
                      "explanation": "string", "evidence": "string", "fix": "string", "example": "string",
                      "cause": Rows({"key": "string", "when": "string", "fix": "string", "behaviour": "string?",
                                     "fix_otherwise": "string?"}, optional=True)}),
    },
    "npu_behaviours": {
        "behaviour": Rows({**_BEHAVIOUR_TEXTS, "torch_npu": "string",
                           "dispatch": Table({"op": "string", "to": "string"})}, optional=True),
    },
    "npu_branches": {
        "npu_branches": Table({"call": "string", "gates": "array", "gate_meaning": "string"}),
        "device_dtypes": Table({"module": "string", "table": "string", "device": "string", "as_device": "string"}),
    },
    "registration": {
        "camel_case": "table?",
        "ordering": Rows({"id": "string", "first": "array", "then": "array", "reason": "string",
                          "source": "string?"}, optional=True),
    },
    # catalogs/ops/<op>.toml, one file per op (core/ops.py)
    "ops": {
        "name": "string", "title": "string", "aliases": "array",
        "primitive": Table({"fused_ops": "array?", "classes": "array?", "exclude_classes": "array?",
                            "functions": "array?", "torch_functions": "array?",
                            "signatures": Rows({"max_ops": "integer?"}, optional=True), "parameters": "array?",
                            "modulation": "boolean?", "rotation": "boolean?", "producer_form": "string?",
                            "forms": Rows({"name": "string", "args": "table?"}, optional=True)}),
        "anchors": Table({"anchors": "array", "fused": "array?", "groups": "array?", "radius": "integer?",
                          "rotation_writes": "array?", "table_builders": "array?", "modulated": "array?"}),
        # core.profiles.catalog_schema checks the rest, as it does a user's --catalog [[op]]
        "kernels": Table({"fused_types": "array"}),
        "recipe": Each({
            "title": "string", "fused_op": "string", "call": "string", "output_like": "string",
            "graph_call": Table({"op": "string", "args": "array", "kwargs": "table?", "role_kwargs": "table?",
                                 "shapes": "table?", "choices": "table?", "at_rank": "array?"}),
            "roles": Rows({"name": "string", "rank": "integer?", "last_dim_of": "string?", "through": "string?",
                           "meets": "string?", "bind_at": "string?", "description": "string?", "arg_of": "array?",
                           "added_to": "string?", "optional": "boolean?", "absent": "string?",
                           "absent_node": "array?", "trailing": "array?", "not_from": "array?"}),
            "setup": Rows({"code": "string", "needs": "array?"}, optional=True),
            "constants": Each({"ops": "array", "arg": "integer", "user": "string?"}, optional=True),
            "imports": "array?", "same_dtype": "array?", "chain_ops": "array?", "starts_at": "string?",
            "requires": "table?", "approximation": "number?", "note": "string?", "choices": "table?",
            "cast_output": "boolean?", "lift": "table?", "partial": "table?",
            "graph_pass": "boolean?", "other_starts": "table?", "other_starts_way_out": "string?",
            "start_operand": "array?", "flat_roles": "array?", "call_takes": "array?", "absorbs": "array?",
            "ends": "array?",
        }),
    },
    "topics": {
        "topic": Each({"title": "string", "doc": "string", "catalog": "string?"}),
    },
    "torch_behaviours": {
        "behaviour": Rows({**_BEHAVIOUR_TEXTS, "probe": "string", "torch": "string"}, optional=True),
    },
    "zoo": {
        "model": Each({"class": "string", "note": "string?", "config": "table?", "inputs": "table?"}),
    },
}
