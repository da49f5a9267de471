"""Ascend profiler output: locating rank files, columnar reading of every kernel_details.csv variant, the kernel
catalog, aggregation per rank and step, eager/compile diffs, copy classification, and CPU capture."""
