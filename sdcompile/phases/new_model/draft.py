"""The class and inputs a factory spells out: built and run once as `--model CLASS` builds it, or, when a forward
argument has no example-input role, drafted from the first size's config and the first candidate of every other
argument, with that argument left for the user to fill in."""

from __future__ import annotations

from typing import Any

from sdcompile.core.zoo.any_class import build_class, first_size
from sdcompile.core.zoo.sized import base_config, given_specs
from sdcompile.core.zoo.synthesis import UnmakeableArgument, attempts, plan_arguments


def built_class(cls, class_name: str, build):
    """(module, size, changed, specs, {}) of the first size whose forward runs."""

    base, _source, _ignored = base_config(cls, build.config)
    built = build_class(class_name, size=build.effective_size, base=base, num_layers=build.num_layers,
                        given=given_specs(build.inputs), cls=cls)
    return built.module, built.size, built.changed, dict(built.specs), {}


def drafted_class(cls, class_name: str, build, missing: dict[str, str]):
    """(module on the meta device, size, changed, specs, {argument: why}) when some argument cannot be made;
    `missing`: the one found so far, with why."""
    import torch

    base, _source, _ignored = base_config(cls, build.config)
    size, config, changed = first_size(cls, build.effective_size, base, build.num_layers)
    with torch.device("meta"):
        module = cls(**config)
    given = given_specs(build.inputs)
    missing = dict(missing)
    while True:
        try:
            plan = plan_arguments(cls.forward, module.config, skip=(*given, *missing))
            break
        except UnmakeableArgument as exc:
            missing[exc.argument] = exc.why
    specs: dict[str, Any] = {**next(iter(attempts(plan))), **given}
    return module, size, changed, specs, missing
