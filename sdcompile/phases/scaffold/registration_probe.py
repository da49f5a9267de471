"""What `register_replacement` keeps of a chain, and trimming what it cannot keep.

The matcher compares the model graph with the pattern as *registered*, and registration re-traces the search
function its own way: on torch 2.13, `register_replacement` hands `get_decomp_fn=select_decomp_table` (inductor's
decomposition table) to the trace function, overriding the empty table MindIE-SD's `fwd_only` wrapper means to
use, so `aten._to_copy.default` is registered as `prims.convert_element_type.default` while MindieSDBackend's own
graph keeps `aten._to_copy.default`. Such an op can never match.

So each candidate chain is registered once through the target's own PatternMatchPass and its registered ops are
compared with the chain's. An op the registration rewrites is trimmed when it sits at the chain's edge (a cast
of an input, a cast of the output): the pattern then starts after it / ends before it and the op stays in the
graph around the fused op. Inside the chain it cannot be trimmed, and the chain cannot be a register_replacement
pattern on this torch (a custom graph pass matches the graph's own nodes and can).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sdcompile.core.graph.pattern_chain import ChainError, laid_out, op_target_name
from sdcompile.core.target.group_runner import fresh_pattern_pass
from sdcompile.core.target.pattern_exprs import pattern_op_targets
from sdcompile.core.torchcompat.pattern_matcher import pretty


@dataclass(frozen=True)
class Probe:
    lost: tuple[str, ...]  # chain ops the registered pattern does not contain
    gained: tuple[str, ...]  # ops the registered pattern contains instead
    registered: str  # PatternPrettyPrinter output of the registered pattern


def search_function(chain):
    """The chain's search function, built from the same lines the template writes."""
    params = ", ".join(i.role for i in chain.inputs)
    body = "\n".join(f"    {line}" for line in chain.search_body)
    return f"def search({params}):\n{body}\n"


def probe(chain, model_dtype) -> Probe:
    """Register `chain` as a pattern in a fresh target PatternMatchPass and compare what was registered."""
    import torch

    namespace: dict[str, Any] = {"torch": torch, "dtype": model_dtype}
    for c in chain.constants:
        namespace[f"_{c.name}"] = c.graph_value
    exec(compile(search_function(chain), "<scaffold probe>", "exec"), namespace)  # noqa: S102 - generated here
    search = namespace["search"]
    inputs = [laid_out(torch.empty, i.shape, i.dim_order, dtype=getattr(torch, i.dtype.removeprefix("torch.")),
                       device="meta") for i in chain.inputs]
    pass_ = fresh_pattern_pass()
    seen = {id(e) for entries in pass_.pattern_pass.patterns.values() for e in entries}
    try:
        pass_.register_pattern("sdcompile-scaffold-probe", search, search, inputs)
    except Exception as exc:  # noqa: BLE001 - a chain registration cannot trace is this site's finding
        # registration traces the search function on contiguous example inputs; the graph's own values may have
        # other strides (a view_as_complex of a transposed value): the graph's own nodes can still be matched
        said = (str(exc).strip().splitlines() or [""])[0][:200]
        raise ChainError(f"registering the chain as a pattern raised {type(exc).__name__}: {said} "
                         "(the search function is traced on contiguous inputs of the chain's shapes)",
                         graph_pass_can=True) from None
    entries = [e for es in pass_.pattern_pass.patterns.values() for e in es if id(e) not in seen]
    registered = set()
    printed = []
    for entry in entries:
        registered |= pattern_op_targets(entry.pattern)
        printed.append(pretty(entry.pattern))
    ops = set(chain.targets) - {"getitem"}
    return Probe(tuple(sorted(ops - registered)), tuple(sorted(registered - ops)), "\n".join(printed))


def trim(nodes: Sequence[Any], lost: Sequence[str]) -> tuple[list, list[str]]:
    """Drop edge nodes whose op the registration rewrites: leading ones that read only chain inputs, and the
    output. Returns the remaining nodes and what was dropped ("aten._to_copy.default on the input")."""

    kept = list(nodes)
    dropped: list[str] = []
    changed = True
    while changed and kept:
        changed = False
        members = set(kept)
        out = next((n for n in reversed(kept) if any(u not in members for u in n.users)), kept[-1])
        if op_target_name(out.target) in lost:
            inner = [a for a in out.all_input_nodes if a in members]
            if len(inner) == 1:
                kept.remove(out)
                dropped.append(f"{op_target_name(out.target)} on the output")
                changed = True
                continue
        for node in kept:
            if op_target_name(node.target) in lost and not any(a in members for a in node.all_input_nodes):
                kept.remove(node)
                dropped.append(f"{op_target_name(node.target)} on an input")
                changed = True
                break
    return kept, dropped
