"""The `debug` phase (phase 5): the graph the pattern pass really sees, aligned node by node with each pattern as
the matcher registered it, at every candidate site. Each module has one job:

    phase.py       the public function: options checked, subjects compiled, groups run, sites judged, result written
    results.py     the frozen result types (DebugResult, SiteResult, GroupAtSite, PatternAtSite, NodeView, ...)
    subjects.py    what debug compiles: the model and each pattern's own search function, at every stage
    groups.py      the groups examined (an op's, named, a pattern file), each registered and applied; registry order
    sites.py       one site, one group: each pattern aligned from its output, torch's verdict, the mismatch type
    output.py      the stage, pattern and after-pass graph dumps, metadata.json and debug.json; phase 5 recorded
    render.py      the renderer: graph breaks, groups, every site's verdict, each mismatch side by side
"""
