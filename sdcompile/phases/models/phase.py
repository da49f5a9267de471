"""`sdcompile models [NAME...] [--check]`: the zoo's models and the other diffusers transformer classes installed
(read without importing diffusers); with --check each named one (or every one) is built and run once with its
example inputs at each size asked for, as `--model NAME [--size real --num-layers N]` does. A real config is first
counted on the meta device, so a class too large for this machine is reported, never built."""

from __future__ import annotations

from sdcompile.core.npu.device import activate_for_command
from sdcompile.core.zoo.any_class import constructor_defaults, model_class, model_name, transformer_classes
from sdcompile.core.zoo.build_options import ModelBuild
from sdcompile.core.zoo.memory import estimate
from sdcompile.core.zoo.model_step import ModelRequest, first_forward
from sdcompile.core.zoo.models import quiet_model_warnings, resolve_model, zoo_entries
from sdcompile.phases.models.results import ModelRow, ModelsReport, SizeCheck
from sdcompile.util.errors import BadInput

REAL_CHECK_LAYERS = 1  # the real-size check builds one block of each kind unless --num-layers says otherwise


def list_models(names: tuple[str, ...] = (), check: bool = False, sizes: tuple[str, ...] = ("tiny", "real"),
                num_layers: int | None = None) -> ModelsReport:
    from importlib.metadata import PackageNotFoundError, version

    zoo = zoo_entries()
    rows = [ModelRow(e.name, e.class_name, "zoo", e.note, ()) for e in zoo.values()]
    in_zoo = {e.class_name for e in zoo.values()}
    rows += [ModelRow(model_name(c), c, "diffusers", "", ()) for c in transformer_classes() if c not in in_zoo]
    if names:
        wanted = {resolve_model(n).name for n in names}  # an unknown name is exit 2 with its did-you-mean
        rows = [r for r in rows if r.name in wanted]
    layers = num_layers or REAL_CHECK_LAYERS
    if check:
        rows = _checked(rows, sizes, layers)
    try:
        diffusers_version = version("diffusers")
    except PackageNotFoundError:
        diffusers_version = None
    verdict = "fail" if any(r.builds is False for r in rows) else "pass"
    return ModelsReport(tuple(rows), diffusers_version, sizes if check else (), layers if check else None, verdict)


def _checked(rows: list[ModelRow], sizes: tuple[str, ...], num_layers: int) -> list[ModelRow]:
    from dataclasses import replace

    activate_for_command(False)
    return [replace(row, checked=tuple(_check(row, size, num_layers) for size in sizes)) for row in rows]


def _check(row: ModelRow, size: str, num_layers: int) -> SizeCheck:
    import gc

    build = ModelBuild(size="real", num_layers=num_layers) if size == "real" else ModelBuild()
    full = _full_parameters(row.class_name) if size == "real" else None
    try:  # built and one forward run, as --model does (a forward that raises is the row's failure)
        built, _output = first_forward(ModelRequest(row.class_name if row.source == "diffusers" else row.name,
                                                    build=build, dtype="fp32"))
    except BadInput as exc:
        return SizeCheck(size, False, "", None, full, exc.message)
    config = built.label.rsplit(", ", 1)[-1].rstrip(")")
    if size == "real":
        config = f"{config}, {num_layers} layer{'s' if num_layers != 1 else ''}"
    parameters = sum(p.numel() for p in built.module.parameters())
    del built
    gc.collect()  # the next model is built in the memory this one held
    return SizeCheck(size, True, config, parameters, full, "")


def _full_parameters(class_name: str) -> int | None:
    """The parameters of the class at its full default config, counted on the meta device (None: it does not
    construct there)."""

    try:
        with quiet_model_warnings():
            cls = model_class(class_name)
            return estimate(cls, constructor_defaults(cls)).parameters
    except Exception:  # noqa: BLE001 - the class's own constructor: the size check reports the error itself
        return None
