"""`sdcompile new-model CLASS --out model.py`: write a factory for a diffusers class with the config and the example
inputs `--model CLASS` would use spelled out (at `--size tiny` or `real`, from `--config`, with `--num-layers` and
`--inputs` as every command takes them), run it once from the file, and say which primitives its forward ran.

The file is where a user takes over what sdcompile guessed: a real config.json's values, the inputs a pipeline
passes, a longer sequence. A forward argument sdcompile cannot make is written as a call that raises until it is
filled in (the run then fails, exit 1, naming it). It is written atomically and never over a file without --force.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from sdcompile._version import __version__
from sdcompile.core.environment import collect_versions
from sdcompile.core.npu.device import activate_for_command
from sdcompile.core.ops import OPS
from sdcompile.core.zoo.any_class import constructor_defaults, model_class
from sdcompile.core.zoo.locate import locate
from sdcompile.core.zoo.model_step import ModelRequest, first_forward
from sdcompile.core.zoo.models import quiet_model_warnings, resolve_model
from sdcompile.core.zoo.primitives import primitive_rules
from sdcompile.core.zoo.runtrace import trace_forward
from sdcompile.core.zoo.synthesis import NoForwardRan, UnmakeableArgument, shown
from sdcompile.phases.new_model.draft import built_class, drafted_class
from sdcompile.phases.new_model.factory_source import factory_source
from sdcompile.phases.new_model.results import NewModelResult, PrimitiveRun
from sdcompile.phases.scaffold.sources import syntax_check
from sdcompile.util.command_line import SdcompileCommand
from sdcompile.util.errors import BadInput
from sdcompile.util.input_checks import check_output_file, check_path_text


def new_model(class_name: str, out: Path | str, *, force: bool = False, dry_run: bool = False,
              timeout: float | None = None, progress=lambda _text: None, build=None) -> NewModelResult:

    out = Path(check_path_text(str(out), "--out"))
    if not dry_run:
        check_output_file(out, force, "--out")  # before the work: it ends in writing there
    spec = resolve_model(class_name, build=build)  # a zoo name stands for its class
    diffusers_class = spec.model_class_name
    if diffusers_class is None or spec.build.capture is not None:
        raise BadInput(f"{class_name!r} is not a diffusers class", "pass a diffusers transformer class name")
    device = activate_for_command(False)
    progress(f"building {diffusers_class} with synthesized inputs on {device.label}")
    draft = _source(diffusers_class, spec.build)
    if not dry_run:
        from sdcompile.util.fsutil import atomic_write_text

        atomic_write_text(out, draft.source)
    primitives, problem = (), ""
    if not draft.missing and not draft.forward_error:
        progress("running the factory once")
        primitives = _run_once(out, draft.source, dry_run, timeout)
    else:
        problem = "; ".join(f"{name}: {why}" for name, why in draft.missing.items())
    return NewModelResult(
        class_name=diffusers_class, out=str(out), written=not dry_run, dry_run=dry_run, size=draft.size,
        changed=draft.changed, inputs=_shown(draft.specs), primitives=primitives, source=draft.source,
        device=device.label, versions=collect_versions(None, device=device),
        next_command=str(SdcompileCommand("analyze", model_file=f"{out}:build")),
        missing=tuple(draft.missing), problem=problem, forward_error=draft.forward_error,
    )


def _shown(specs) -> str:
    return shown(specs)


@dataclass(frozen=True)
class _Draft:
    source: str
    size: str
    changed: tuple[str, ...]
    specs: dict
    missing: dict[str, str]  # forward arguments left to fill in -> why sdcompile could not make them
    forward_error: str = ""  # no forward ran with the inputs tried (the file holds the first ones, to edit)


def _source(class_name: str, build) -> _Draft:
    cls = model_class(class_name)
    forward_error = ""
    with quiet_model_warnings():
        try:
            module, size, changed, specs, missing = built_class(cls, class_name, build)
        except UnmakeableArgument as exc:  # written with what sdcompile can make, the rest left to fill in
            module, size, changed, specs, missing = drafted_class(cls, class_name, build, {exc.argument: exc.why})
        except NoForwardRan as exc:  # written with the first inputs tried, for the user to correct
            module, size, changed, specs, missing = drafted_class(cls, class_name, build, {})
            forward_error = exc.last
    defaults = constructor_defaults(cls)
    config = {k: v for k, v in dict(module.config).items() if k in defaults}
    origin = f"{build.config}" if build.config is not None else "its default config"
    header = (f"A factory for diffusers' {class_name}, written by `sdcompile new-model {class_name}` (sdcompile "
              f"{__version__}): {origin} at size {size!r} and the example inputs sdcompile synthesized from its "
              "forward.")
    source = factory_source(class_name, config, defaults, specs, header, missing)
    syntax_check(source, "the factory file")
    return _Draft(source, size, changed, specs, missing, forward_error)


def _run_once(out: Path, source: str, dry_run: bool, timeout: float | None) -> tuple[PrimitiveRun, ...]:
    """What the factory's forward ran, from the file as written (a preview runs a temporary copy)."""
    if not dry_run:
        return _primitives(out, timeout)
    with tempfile.TemporaryDirectory(prefix="sdcompile-new-model-") as folder:
        copy = Path(folder) / out.name
        copy.write_text(source, encoding="utf-8")
        return _primitives(copy, timeout)


def _primitives(path: Path, timeout: float | None) -> tuple[PrimitiveRun, ...]:
    built, trace = first_forward(ModelRequest(model_file=f"{path.resolve()}:build", timeout=timeout), trace_forward)
    found = locate(trace, type(built.module), OPS)
    rules = primitive_rules()
    return tuple(PrimitiveRun(op, rules[op].title, tuple(i.display_name for i in found[op]),
                              sum(s.calls for i in found[op] for s in i.sites)) for op in OPS)
