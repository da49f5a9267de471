"""The `scaffold` phase (phase 2): the sites of one op in a model's graph, the reuse check of the target's groups,
rendering generated files from templates, checking them against the sites they came from, and writing them.

The phase itself (`sdcompile.phases.scaffold.phase`) strings these together; each module here has one job:

    phase.py               the public function: input checked, then survey, plan, generate, write and record
    results.py             the frozen result types (ScaffoldResult, SiteRow, SiteCoverage, SiteCheck, Variant, ...)
    path_choice.py         phase 1's decision per implementation (analysis.json; analyze first if needed), --path
    survey.py              per dtype the op's sites, the reuse runs on their graph, and what each site needs
    sites.py               where the op's sites are in the graph the pass sees (before freezing) and after freeze()
    reuse.py               the target's own PatternMatchPass run on copies of that graph: what replaces which site
    registration_probe.py  what register_replacement keeps of a chain; edge ops it rewrites are trimmed
    variants.py            sites grouped into distinct chains (probed, trimmed) and named
    generate.py            the variants rendered and checked, with their tests (pattern, GraphPatternEntry or pass)
    pattern_file.py        the pattern module rendered, imported as the target would, its group run on the sites
    entries_file.py        the GraphPatternEntry carrier rendered, imported, its entries run in the target's pass
    pass_file.py           a custom graph pass (only on --path graph-pass) rendered, imported, run on the sites
    shadowing.py           which enabled groups would take the generated group's sites if registered after them
    sources.py             Jinja2 templates (StrictUndefined) -> pattern, carrier, pass and test sources
    selfcheck.py           a generated source, imported as the target would, run on the sites it came from
    files.py               new files planned, diffed and written all together (or not at all)
    outcome.py             the decision over all sites, each site's row, the gate, the variants as shown
    record.py              phase 2 recorded in the workspace (scaffold.json, generated sources, backend diff)
    render.py              the renderer, and the prose the result carries (worded from the typed decisions)
    reference.py           the fused-op quick reference of docs/pattern-templates.md, from the catalogs

The ATen-subgraph-to-source step itself is sdcompile.core.graph.pattern_codegen.
"""
