"""Graphs as MindIE-SD's backend sees them.

    capture.py          capture_graphs(): compile like MindieSDBackend, keep dynamo / aot / before_freezing /
                        after_patterns / after_freezing graphs with node meta (stages.py names the stages)
    tensor_origins.py   what each placeholder / get_attr node holds (parameter, buffer, input), stage by stage
    redundant_nodes.py  sdcompile's equivalent of the backend's redundant-node elimination pass
    nodes.py            node -> submodule, source frames, readable op name and line
    dump.py             stable-named text dumps and capture.json
    sites.py            the ATen subgraph a located site (class / function / inline code) becomes in a stage
    candidates.py       every place in a stage graph where a pattern for an op should match
    pattern_graph.py    a pattern graph exactly as register_replacement traced and registered it
    align.py            a registered pattern walked against a model graph as torch's matcher does;
                        alignment.py what it records, align_arguments.py how arguments compare
    mismatch.py         the first difference classified into the seven mismatch types
    pattern_codegen.py  extract_chain(): a site's ATen subgraph checked and bound as one chain;
                        pattern_chain.py the chain as data, chain_source.py its nodes written as source,
                        pattern_recipes.py the replacement recipes (catalogs/ops/<op>.toml) and what they write
"""
