"""What tests of patterns and graph passes use: numerics (compare, tolerances, example inputs), real RoPE tables, the
pytest plugin that emulates the NPU.
"""
