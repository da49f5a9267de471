"""Phase 2's machinery: the sites of one op in a model's graph, the reuse check of the target's groups, rendering
generated files from templates, checking them against the sites they came from, and writing them.

The phase itself (`sdcompile.phases.scaffold.phase`) strings these together; each module here has one job:

    sites.py               where the op's sites are in the graph the pass sees (before freezing) and after freeze()
    reuse.py               the target's own PatternMatchPass run on copies of that graph: what replaces which site
    registration_probe.py  what register_replacement keeps of a chain; edge ops it rewrites are trimmed
    generate.py            sites grouped into distinct chains, named, rendered and checked (pattern or graph pass)
    render.py              Jinja2 templates (StrictUndefined) -> pattern, graph pass and test sources
    selfcheck.py           a generated source, imported as the target would, run on the sites it came from
    backend_edit.py        the mindie_sd_backend.py edit a custom graph pass needs, through LibCST, as a diff
    files.py               new files planned, diffed and written all together (or not at all)
    reference.py           the fused-op quick reference of docs/pattern-templates.md, from the catalogs

The ATen-subgraph-to-source step itself is sdcompile.core.graph.pattern_codegen.
"""
