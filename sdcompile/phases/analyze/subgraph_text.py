"""The text of an implementation's subgraphs file (snippets/<name>.aten.txt): each site's ATen subgraph per stage."""

from __future__ import annotations

from sdcompile.core.graph.stages import STAGE_DESCRIPTIONS


def subgraphs_text(loc, per_site, capture) -> str:
    """`per_site`: (site path, before_freezing subgraphs, after_freezing subgraphs) for each site."""

    m = capture.metadata
    lines = [
        f"# {loc.op}: {loc.display_name} — the ATen subgraph of each site",
        f"# model {m.model} ({m.dtype}), device {m.device}, torch {m.torch_version}, diffusers {m.diffusers_version}",
        "",
    ]
    for path, before, after in per_site:
        for stage_subs in (before, after):
            for sub in stage_subs:
                lines.append(f"## site {path or '(the model itself)'} — stage {sub.stage} "
                             f"(graph {sub.graph_index}): {STAGE_DESCRIPTIONS[sub.stage]}")
                if sub.shared:
                    lines.append("#   (a graph dynamo compiled from this code itself after a graph break: every site "
                                 "calling it runs this same graph)")
                for name, what in sub.inputs:
                    lines.append(f"#   input {name}: {what}")
                lines.append(sub.render())
                lines.append("")
        if not before and not after:
            lines.append(f"## site {path or '(the model itself)'}: no nodes found in the captured graphs")
            lines.append("")
    return "\n".join(lines)
