"""Models and primitives as data.

    models.py      the model zoo (catalogs/zoo.toml) and --model-file: resolve_model(), build_model() -> BuiltModel
    any_class.py   --model <any diffusers class>: its default config shrunk (catalogs/any_model.toml)
    synthesis.py   that class's example inputs, from its forward's signature and argument roles (the same catalog)
    model_file.py  --model-file path.py:factory, imported and called with what user code may do contained
    deadline.py    --timeout: a deadline on user code (a model's build and forward), exit 2 naming what hung
    inputs.py      example inputs from catalog specs; recipes.py for the few that need code
    toml_values.py values read from the zoo's TOML as the models take them
    primitives.py  the catalog of what counts as RMSNorm / RoPE / AdaLN / GELU (catalogs/ops/<op>.toml)
    runtrace.py    one eager forward, recorded: module calls, torch calls and their Python frames, parameters read
    provenance.py  tensor provenance in that run: split pieces, pass-throughs, x * (1 + scale) + shift
    locate.py      which implementations of each primitive ran, and at which submodule sites
    source.py      the complete source of an implementation, with the lines its forward ran through
"""
