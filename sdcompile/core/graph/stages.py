"""The stages at which graph.capture keeps a model's graph, as MindieSDBackend compiles it."""

STAGE_DYNAMO = "dynamo"
STAGE_AOT = "aot"
STAGE_BEFORE_FREEZING = "before_freezing"
STAGE_AFTER_PATTERNS = "after_patterns"
STAGE_AFTER_FREEZING = "after_freezing"
STAGES = (STAGE_DYNAMO, STAGE_AOT, STAGE_BEFORE_FREEZING, STAGE_AFTER_PATTERNS, STAGE_AFTER_FREEZING)

STAGE_DESCRIPTIONS = {
    STAGE_DYNAMO: "the torch-level FX graph dynamo hands to the backend",
    STAGE_AOT: "the AOT inference forward graph (ATen) as MindieSDBackend's compile_inner receives it",
    STAGE_BEFORE_FREEZING: "the AOT graph after redundant-node elimination: what the pattern pass in "
    "graph_rewrite_before_freezing matches against",
    STAGE_AFTER_PATTERNS: "the graph after the pattern pass",
    STAGE_AFTER_FREEZING: "the graph after torch._inductor.freezing.freeze(): what graph_rewrite_after_freezing "
    "and a custom graph pass see",
}
