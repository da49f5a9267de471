"""Typer adapters, one module per command: parse options, call one core function, render its result.

Modules here import only typer at top level; everything heavy is imported inside the command function,
so `sdcompile --help` and `sdcompile status` never import torch, diffusers or pandas.
"""
