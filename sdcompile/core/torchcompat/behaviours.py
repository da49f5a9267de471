"""The torch behaviours of `catalogs/torch_behaviours.toml`, each probed on the installed torch."""

from __future__ import annotations

from dataclasses import dataclass

from sdcompile.util.errors import BadInput


@dataclass(frozen=True)
class TorchBehaviour:
    key: str
    torch_range: str  # ">=2.12"
    seen: str
    applies_text: str
    otherwise_text: str
    holds: bool  # the installed torch has it (probed)

    @property
    def effect(self) -> str:
        return self.applies_text if self.holds else self.otherwise_text


def _forwards_decomp_fn() -> bool:
    from sdcompile.core.torchcompat import pattern_matcher

    return pattern_matcher.forwards_decomp_fn()


def _search_trace_takes_decomp_fn() -> bool:
    from sdcompile.core.torchcompat import pattern_matcher

    return pattern_matcher.search_trace_takes_decomp_fn()


def _traces_full_slices() -> bool:
    """Whether tracing keeps `x[:, None, :]`'s whole-dimension slices as aten.slice nodes (newer torch drops
    them as the no-ops they are)."""
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx

    graph = make_fx(lambda x: x[:, None, :])(torch.empty(2, 4)).graph
    return any(n.target is torch.ops.aten.slice.Tensor for n in graph.nodes)


PROBES = {"forwards_decomp_fn": _forwards_decomp_fn, "search_trace_takes_decomp_fn": _search_trace_takes_decomp_fn,
          "traces_full_slices": _traces_full_slices}


def catalog() -> list[dict]:
    from sdcompile.catalogs import load

    entries = load("torch_behaviours").get("behaviour", [])
    for entry in entries:
        missing = [k for k in ("key", "probe", "torch", "seen", "applies", "otherwise") if k not in entry]
        if missing or entry["probe"] not in PROBES:
            raise BadInput(f"catalogs/torch_behaviours.toml: entry {entry.get('key', '?')!r} lacks {missing} "
                           f"or names an unknown probe; fix the entry")
    return entries


def behaviours() -> list[TorchBehaviour]:
    """Every catalogued behaviour with whether the installed torch has it (imports torch)."""
    return [TorchBehaviour(e["key"], e["torch"], e["seen"], e["applies"], e["otherwise"], PROBES[e["probe"]]())
            for e in catalog()]


def holds(key: str) -> bool:
    for behaviour in behaviours():
        if behaviour.key == key:
            return behaviour.holds
    raise KeyError(key)


def torch_range(key: str) -> str:
    for entry in catalog():
        if entry["key"] == key:
            return entry["torch"]
    raise KeyError(key)
