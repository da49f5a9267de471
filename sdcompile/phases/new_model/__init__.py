"""`sdcompile new-model`: a factory file for a diffusers class, with its config and example inputs spelled out."""
