"""The one door to torch's private APIs: the pattern matcher, dynamo, inductor's freezing and config.

sdcompile supports torch 2.7 to 2.13 (MindIE-SD 3.1.0's range), and torch's internals differ across it: from
2.12 on `register_replacement` forwards its own `get_decomp_fn` to the trace function, before 2.12 it calls
`trace_fn(search_fn, args)`; `gen_pattern_and_search_gm` only takes `get_decomp_fn` from 2.12. Every module of
sdcompile reaches torch internals through this package, which probes features (signatures, attributes) rather
than version strings, so a torch that backports or drops a feature is read as it is. `tests/test_layering.py`
fails when another module imports `torch._inductor`, `torch._dynamo`, `torch._guards` or `torch._dispatch`.
"""

from sdcompile.core.torchcompat.support import SUPPORTED_TORCH, TorchSupport, torch_support

__all__ = ["SUPPORTED_TORCH", "TorchSupport", "torch_support"]
