"""The `analyze` phase (phase 1): each primitive of a model found, extracted and classified. Each module has one job:

    phase.py            the public function: build, trace, locate, capture, then assemble the result
    results.py          the frozen result types (AnalyzeResult, OpReport, ImplementationReport, Holder, ...)
    implementation.py   one primitive's report: per implementation its sites, tensors, path, evidence, NPU note
    graph_reads.py      what the captured graphs show of an implementation: subgraphs, tensor holders, evidence
    path_decision.py    the recipe's path rule (register_replacement or GraphPatternEntry), decided on Holder
    npu_note.py         where diffusers itself calls a torch_npu fused op, and where this run took that branch
    capture_summary.py  the capture's graphs, stages and how each stage holds parameters
    subgraph_text.py    the text of an implementation's ATen subgraphs file
    artifacts.py        snippets, subgraphs files and analysis.json written to the workspace; phase 1 recorded
    render.py           the renderer, and the prose the result carries (worded from the typed decisions)
"""
