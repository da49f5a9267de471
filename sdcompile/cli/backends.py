from __future__ import annotations

from sdcompile.cli import options


def backends(json_: bool = options.Json) -> None:
    """The four backends (default, torchair_ge, npugraph_ex, aclgraph): availability here, and how they differ."""
    from sdcompile.phases.backends.phase import collect_backends
    from sdcompile.phases.backends.render import render_backends
    from sdcompile.rendering.output import emit

    emit(collect_backends(), json_, render_backends)
