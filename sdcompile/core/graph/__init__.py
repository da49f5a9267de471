"""Graphs as MindIE-SD's backend sees them.

    capture.py         capture_graphs(): compile like MindieSDBackend, keep dynamo / aot / before_freezing /
                       after_patterns / after_freezing graphs with node meta and what each input holds
    redundant_nodes.py sdcompile's equivalent of the backend's redundant-node elimination pass
    nodes.py           node -> submodule, source frames, readable op name and line
    dump.py            stable-named text dumps and capture.json
    sites.py           the ATen subgraph a located site (class / function / inline code) becomes in a stage
"""
