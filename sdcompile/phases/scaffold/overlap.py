"""Whether a pattern would take chains meant for a graph pass.

A pattern over AdaLN's modulation alone (scale_shift after an RMSNorm) matches `x * (1 + scale) + shift` after any
norm: it cannot check where x comes from (MindIE-SD registers patterns without an extra_check). The pattern pass
runs before freeze() and a graph pass after it, so such a pattern takes the modulation of a LayerNorm chain this run
sends to a graph pass before the pass sees it. Whether it does is asked of the matcher itself: the pattern is
registered through the target's PatternMatchPass and run on copies of those chains' graphs.

    takes = takes_graph_pass_chains(pattern_variant, pass_variants)
"""

from __future__ import annotations

from typing import Any


def takes_graph_pass_chains(pattern_variant, pass_variants) -> bool:
    """Whether `pattern_variant`'s first chain, registered as the target registers patterns, replaces a node of a
    site of `pass_variants` (their before-freezing nodes, where the pattern pass runs)."""
    from sdcompile.phases.scaffold.reuse import RegisteredGroups

    targets = {(id(site.before_stage), node.name): site.before_stage
               for v in pass_variants for _dt, site, _chain in v.members if site.before_stage is not None
               for node in site.before}
    if not targets:
        return False
    stages = {id(stage): stage for stage in targets.values()}
    pattern = _probe_class(pattern_variant.chain, pattern_variant.members[0][0])
    registered = RegisteredGroups([("sdcompile-overlap", [pattern])])
    for key, stage in stages.items():
        run = registered.apply(stage.gm, "sdcompile-overlap")
        if any((key, name) in targets for r in run.replacements for name in r.nodes):
            return True
    return False


def _probe_class(chain, dtype: str) -> Any:
    """A pattern class for `chain`: its search function, and a replacement that only stands in (an empty tensor of
    the output's shape), so that a match is recorded and the pass's loop ends."""
    import torch

    from sdcompile.core.zoo.models import torch_dtype
    from sdcompile.phases.scaffold.numerics_gate import recorded_dtype
    from sdcompile.phases.scaffold.registration_probe import search_function

    namespace: dict[str, Any] = {"torch": torch, "dtype": torch_dtype(dtype)}
    namespace.update({f"_{c.name}": c.graph_value for c in chain.constants})
    exec(compile(search_function(chain), "<scaffold overlap probe>", "exec"), namespace)  # noqa: S102 - generated
    out_shape, out_dtype = list(chain.output_shape), recorded_dtype(chain.output_dtype)
    inputs = [torch.empty(i.shape, dtype=recorded_dtype(i.dtype)) for i in chain.inputs]

    class OverlapProbe:
        pattern = staticmethod(namespace["search"])

        @staticmethod
        def name() -> str:
            return "sdcompile-overlap-probe"

        @staticmethod
        def inputs():
            return inputs

        @staticmethod
        def replacement(*args):
            return torch.empty(out_shape, dtype=out_dtype, device=args[0].device)

    return OverlapProbe

