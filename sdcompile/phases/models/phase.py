"""`sdcompile models [NAME...] [--check]`: the zoo's models and the other diffusers transformer classes installed
(read without importing diffusers); with --check each named one (or every one) is built and run once with its
example inputs, as `--model NAME` does."""

from __future__ import annotations

from sdcompile.phases.models.results import ModelRow, ModelsReport


def list_models(names: tuple[str, ...] = (), check: bool = False) -> ModelsReport:
    from importlib.metadata import PackageNotFoundError, version

    from sdcompile.core.zoo.any_class import model_name, transformer_classes
    from sdcompile.core.zoo.models import resolve_model, zoo_entries

    zoo = zoo_entries()
    rows = [ModelRow(e.name, e.class_name, "zoo", e.note, False, None, "", "") for e in zoo.values()]
    in_zoo = {e.class_name for e in zoo.values()}
    rows += [ModelRow(model_name(c), c, "diffusers", "", False, None, "", "")
             for c in transformer_classes() if c not in in_zoo]
    if names:
        wanted = {resolve_model(n).name for n in names}  # an unknown name is exit 2 with its did-you-mean
        rows = [r for r in rows if r.name in wanted]
    if check:
        rows = _checked(rows)
    try:
        diffusers_version = version("diffusers")
    except PackageNotFoundError:
        diffusers_version = None
    verdict = "fail" if any(r.builds is False for r in rows) else "pass"
    return ModelsReport(tuple(rows), diffusers_version, verdict)


def _checked(rows: list[ModelRow]) -> list[ModelRow]:
    from dataclasses import replace

    from sdcompile.core.npu.device import activate_for_command
    from sdcompile.core.zoo.models import build_model, resolve_model
    from sdcompile.util.errors import BadInput

    activate_for_command(False)
    out = []
    for row in rows:
        try:
            built = build_model(resolve_model(row.class_name if row.source == "diffusers" else row.name), "fp32")
        except BadInput as exc:
            out.append(replace(row, checked=True, builds=False, problem=exc.message))
            continue
        size = built.label.rsplit(", ", 1)[-1].rstrip(")")
        out.append(replace(row, checked=True, builds=True, size=size))
    return out
