"""The mechanisms every phase builds on: graph capture, alignment and codegen (graph), the MindIE-SD tree (target), the
NPU or its emulation (npu), models (zoo), profiler folders (profiles), torch internals (torchcompat). Nothing here
imports a phase, a renderer or the lifecycle.
"""
