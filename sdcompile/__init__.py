"""sdcompile: a workbench for adapting diffusion transformers to MindIE-SD's torch.compile backend."""

__version__ = "0.1.0"
