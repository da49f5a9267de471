"""The kernel catalog (sdcompile/catalogs/kernels.toml and each op's [kernels], extendable with `--catalog FILE`):
op types from names, families, the fused ops with their eager chains, and the CPU-capture mapping."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from sdcompile.catalogs import load
from sdcompile.core.ops import op_tables
from sdcompile.core.profiles.catalog_schema import check_catalog
from sdcompile.util.choices import UnknownChoice
from sdcompile.util.errors import BadInput

OTHER = "other"


@dataclass(frozen=True)
class Rule:
    label: str
    types: frozenset[str] | None = None
    not_types: frozenset[str] = frozenset()
    name_prefix: str | None = None
    name_regex: re.Pattern | None = None
    cores: frozenset[str] | None = None

    def matches(self, name: str, op_type: str, core: str | None) -> bool:
        if self.types is not None and op_type not in self.types:
            return False
        if op_type in self.not_types:
            return False
        if self.name_prefix is not None and not name.startswith(self.name_prefix):
            return False
        if self.name_regex is not None and not self.name_regex.search(name):
            return False
        if self.cores is not None and (core or "") not in self.cores:
            return False
        return True


@dataclass(frozen=True)
class Family:
    name: str
    title: str
    role: str
    rules: tuple[Rule, ...]


@dataclass(frozen=True)
class FusedOp:
    name: str
    title: str
    aliases: tuple[str, ...]
    fused_types: tuple[str, ...]
    eager_chain: tuple[str, ...]
    signature: tuple[str, ...]
    # kernel types that belong to the signature only when their inputs are complex (a complex RoPE's Mul; real Muls
    # are every layer's)
    complex_signature: tuple[str, ...] = ()
    # ...and those that belong to it only when an input has rank 5 or more (a rotation-matrix RoPE's Muls)
    high_rank_signature: tuple[str, ...] = ()


@dataclass(frozen=True)
class NameRule:
    """How a Name encodes its op type (for rows whose Type is N/A): see [[name_rule]] in kernels.toml."""

    label: str
    regex: re.Pattern
    fixed_type: str | None = None
    prefer_known: bool = False
    renames: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Classified:
    op_type: str
    family: str
    rule: str  # the label of the rule that placed the kernel in its family ("" for `other`)
    key: str = ""  # what the diff compares by name: the Name, or its run-independent key ([[key_rule]])


class KernelCatalog:
    def __init__(self, data: dict[str, Any], sources: tuple[str, ...]):
        self.sources = sources
        self.ops = {o["name"]: _op(o) for o in data.get("op", [])}
        self.families = tuple(_family(f, self.ops) for f in data.get("family", []))
        self.recipe_search = tuple(data.get("copy_audit", {}).get("recipe_search", ()))
        cpu = data.get("cpu", {})
        self.cpu_no_kernel = frozenset(cpu.get("no_kernel", ()))
        self.cpu_fused_prefixes = tuple(cpu.get("fused_prefixes", ()))
        self.cpu_op_types: dict[str, str] = dict(cpu.get("op_types", {}))
        self.name_rules = tuple(_name_rule(r) for r in data.get("name_rule", []))
        self.key_rules = tuple((r.get("label", ""), _regex(r["regex"], "key_rule")) for r in data.get("key_rule", [])
                               if "regex" in r)
        sources = data.get("sources", {})
        self.npu_cores = frozenset(sources.get("npu_cores", ()))
        self.cpu_cores = frozenset(sources.get("cpu_cores", ()))
        self._cache: dict[tuple[str, str | None, str | None], Classified] = {}

    @cached_property
    def known_types(self) -> frozenset[str]:
        types: set[str] = set(self.cpu_op_types.values())
        for fam in self.families:
            for rule in fam.rules:
                types |= set(rule.types or ())
        for op in self.ops.values():
            types |= set(op.fused_types) | set(op.eager_chain)
        return frozenset(types)

    def family(self, name: str) -> Family | None:
        return next((f for f in self.families if f.name == name), None)

    def roles(self, role: str) -> tuple[str, ...]:
        return tuple(f.name for f in self.families if f.role == role)

    def op_type_from_name(self, name: str) -> str:
        """The op type a kernel Name encodes, by the first matching [[name_rule]]; the Name itself otherwise."""
        if name in self.known_types:
            return name
        for rule in self.name_rules:
            m = rule.regex.match(name)
            if m is None:
                continue
            found = rule.fixed_type or m.groupdict().get("type") or name
            if rule.prefer_known:
                found = self._longest_known(name) or found
            return dict(rule.renames).get(found, found)
        return name

    def _longest_known(self, name: str) -> str | None:
        stem = name
        while stem and stem[-1].isdigit():
            stem = stem[:-1]
            if stem.rstrip("_") in self.known_types:
                return stem.rstrip("_")
        return None

    def name_key(self, name: str) -> str:
        """The Name with a per-run number dropped (the first matching [[key_rule]]), else the Name."""
        for _, regex in self.key_rules:
            m = regex.match(name)
            if m is not None:
                return m["key"]
        return name

    def resolve_op(self, op: str) -> FusedOp:
        key = op.strip()
        for candidate in self.ops.values():
            if key.lower() == candidate.name.lower() or key.lower() in (a.lower() for a in candidate.aliases):
                return candidate

        names = [o.name for o in self.ops.values()]
        raise UnknownChoice("op", op, names, message=f"unknown op {op!r} in the kernel catalog",
                            hint=" or an alias, or add an [[op]] entry with --catalog FILE")

    def classify(self, name: str, op_type: str | None, core: str | None = None) -> Classified:
        key = (name, op_type, core)
        hit = self._cache.get(key)
        if hit is None:
            resolved = op_type if op_type else self.op_type_from_name(name)
            key = self.name_key(name)
            hit = Classified(resolved, OTHER, "", key)
            for fam in self.families:
                rule = next((r for r in fam.rules if r.matches(name, resolved, core)), None)
                if rule is not None:
                    hit = Classified(resolved, fam.name, rule.label, key)
                    break
            self._cache[key] = hit
        return hit

    def recipe_search_hit(self, name: str, op_type: str) -> bool:
        return any(term in name or term in op_type for term in self.recipe_search)


def _op(entry: dict[str, Any]) -> FusedOp:
    try:
        return FusedOp(
            name=entry["name"],
            title=entry.get("title", entry["name"]),
            aliases=tuple(entry.get("aliases", ())),
            fused_types=tuple(entry["fused_types"]),
            eager_chain=tuple(entry.get("eager_chain", ())),
            signature=tuple(entry.get("signature", ())),
            complex_signature=tuple(entry.get("complex_signature", ())),
            high_rank_signature=tuple(entry.get("high_rank_signature", ())),
        )
    except KeyError as exc:
        raise BadInput(f"kernel catalog [[op]] entry {entry.get('name', '?')!r} lacks {exc}",
                       "give every [[op]] a name and fused_types") from exc


def _regex(pattern: str, where: str) -> re.Pattern:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise BadInput(f"kernel catalog {where}: bad regex {pattern!r} ({exc})", "fix the regular expression") from exc


def _name_rule(entry: dict[str, Any]) -> NameRule:
    label = entry.get("label", entry.get("regex", "?"))
    if "regex" not in entry:
        raise BadInput(f"kernel catalog [[name_rule]] {label!r} has no regex", "give every [[name_rule]] a regex")
    regex = _regex(entry["regex"], f"[[name_rule]] {label!r}")
    if "type" not in entry and "type" not in regex.groupindex:
        raise BadInput(f"kernel catalog [[name_rule]] {label!r}: its regex has no (?P<type>...) group and no `type`",
                       "name the group that holds the op type, or give a fixed type")
    return NameRule(label, regex, entry.get("type"), entry.get("prefer_known", False),
                    tuple(sorted(entry.get("renames", {}).items())))


def _family(entry: dict[str, Any], ops: dict[str, FusedOp]) -> Family:
    name = entry.get("name")
    if not name:
        raise BadInput("kernel catalog [[family]] entry without a name", "give every [[family]] a name")
    rules = []
    if "op" in entry:
        op = ops.get(entry["op"])
        if op is None:
            raise BadInput(f"kernel catalog family {name!r} names op {entry['op']!r}, which has no [[op]] entry",
                           "add the [[op]] or fix the name")
        rules.append(Rule(f"Type in {op.title} fused kernels {{{', '.join(op.fused_types)}}}",
                          types=frozenset(op.fused_types)))
    for r in entry.get("rule", []):
        try:
            regex = re.compile(r["name_regex"]) if "name_regex" in r else None
        except re.error as exc:
            raise BadInput(f"kernel catalog family {name!r}: bad name_regex ({exc})", "fix the regular expression") \
                from exc
        rules.append(Rule(
            label=r.get("label", name),
            types=frozenset(r["types"]) if "types" in r else None,
            not_types=frozenset(r.get("not_types", ())),
            name_prefix=r.get("name_prefix"),
            name_regex=regex,
            cores=frozenset(r["cores"]) if "cores" in r else None,
        ))
    return Family(name, entry.get("title", name), entry.get("role", OTHER), tuple(rules))


def load_catalog(user_file: Path | str | None = None) -> KernelCatalog:
    """The built-in catalog, extended by `user_file` (its families first; ops and cpu mappings replace ours)."""
    base = {**load("kernels"), "op": [{"name": op, "title": t["title"], "aliases": t["aliases"], **t["kernels"]}
                                      for op, t in op_tables().items()]}  # each op's [kernels], in its own file
    check_catalog(base, "built-in kernel catalog")
    if user_file is None:
        return KernelCatalog(base, ("built-in",))
    path = Path(user_file)
    try:
        extra = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise BadInput(f"catalog file {path} does not exist", "pass a TOML file in the kernels.toml schema") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise BadInput(f"catalog file {path} is not valid TOML ({exc})", "fix the file") from exc
    check_catalog(extra, f"catalog file {path}")
    ops = {o["name"]: o for o in base.get("op", [])} | {o["name"]: o for o in extra.get("op", []) if "name" in o}
    cpu = dict(base.get("cpu", {}))
    extra_cpu = extra.get("cpu", {})
    cpu["op_types"] = {**cpu.get("op_types", {}), **extra_cpu.get("op_types", {})}
    cpu["no_kernel"] = list(cpu.get("no_kernel", ())) + list(extra_cpu.get("no_kernel", ()))
    cpu["fused_prefixes"] = list(cpu.get("fused_prefixes", ())) + list(extra_cpu.get("fused_prefixes", ()))
    copy_audit = {**base.get("copy_audit", {}), **extra.get("copy_audit", {})}
    merged = {
        "family": list(extra.get("family", [])) + list(base.get("family", [])),
        "op": list(ops.values()),
        "cpu": cpu,
        "copy_audit": copy_audit,
        "name_rule": list(extra.get("name_rule", [])) + list(base.get("name_rule", [])),
        "key_rule": list(extra.get("key_rule", [])) + list(base.get("key_rule", [])),
        "sources": {k: list(base.get("sources", {}).get(k, ())) + list(extra.get("sources", {}).get(k, ()))
                    for k in ("npu_cores", "cpu_cores")},
    }
    return KernelCatalog(merged, ("built-in", str(path)))
