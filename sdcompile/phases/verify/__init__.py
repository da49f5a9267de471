"""The `verify` phase (phase 4): the target's own backend run with only the chosen pattern group(s) enabled. Each
module has one job:

    phase.py         the public function: groups selected, each verified at unit and model level, report written
    results.py       the frozen result types (VerifyReport, GroupResult, UnitCase, ModelLevel, Divergence, ...)
    unit.py          one pattern against a module whose forward is its own search function: hits, graph, numerics
    model_level.py   one group on a real model graph: replacements, where they landed, mismatch type 7
    diagnosis.py     why a pattern replaced nothing: debug's alignment read as a Divergence
    fused_ops.py     the ops a pattern's replacement traces to, and which are the target's fused ops
    timing.py        compiled vs eager timing, on a real NPU only
    evidence.py      evidence files (graphs before and after the pass, the pattern as registered)
    report_files.py  verify.json and verify.md in the workspace; phase 4 recorded for the pair
    render.py        the renderer (rich tables) and verify.md's Markdown
"""
