from __future__ import annotations

from pathlib import Path

import typer

from sdcompile.cli import options


def register(
    model: str | None = typer.Option(None, "--model", help="Model short name, e.g. flux: names the workspace record "
                                     "and derives the three names."),
    op: str | None = typer.Option(None, "--op", help="Op short name, e.g. rmsnorm."),
    flag: str | None = typer.Option(None, "--flag", help="FusionPatterns flag and pattern_registry key. "
                                    "Default: enable_<model>_<op>."),
    group: str | None = typer.Option(None, "--group", help="Pattern group name. Default: <Model><Op>PatternGroup."),
    module: str | None = typer.Option(None, "--module", help="Pattern module file in patterns/ (with or without .py)"
                                      ". Default: <model>_<op>_pattern."),
    before: str | None = typer.Option(None, "--before", metavar="KEY", help="Put the registry entry before this "
                                      "entry (its flag or group). Default: append."),
    after: str | None = typer.Option(None, "--after", metavar="KEY", help="Put the registry entry after this entry."),
    allow_missing: bool = typer.Option(False, "--allow-missing", help="Register although patterns/<module>.py does "
                                       "not exist yet (the target cannot import its patterns until it does)."),
    undo: bool = typer.Option(False, "--undo", help="Remove exactly what register adds (whichever parts are "
                              "present)."),
    check: bool = typer.Option(False, "--check", help="Audit the whole target's registration instead: flags, "
                               "registry entries and exports agree, groups are importable, no duplicates. "
                               "Exit 1 when inconsistent."),
    import_modules: bool = typer.Option(False, "--import", help="With --check: also import every pattern module "
                                        "under the NPU (real, or emulated on CPU) and report those that fail."),
    repo: Path | None = options.Repo,
    workdir: Path | None = options.Workdir,
    dry_run: bool = options.DryRun,
    json_: bool = options.Json,
) -> None:
    """Phase 3: register a pattern group in the target's three files (patterns __init__, pattern_registry,
    FusionPatterns flag) — all or none, idempotent; --undo removes it; --check audits the whole target. A custom
    graph pass is not registered: register checks that the backend calls it (exit 1 with the patch until it does).
    A pair whose scaffold reused the target's groups (or found the fused op already called) has nothing to register:
    phase 3 is recorded as skipped."""
    from sdcompile.rendering.output import emit, message
    from sdcompile.util.errors import BadInput

    if check:
        extra = [name for name, value in (("--model", model), ("--op", op), ("--flag", flag), ("--group", group),
                                          ("--module", module), ("--before", before), ("--after", after),
                                          ("--allow-missing", allow_missing), ("--undo", undo),
                                          ("--dry-run", dry_run)) if value]
        if extra:
            raise BadInput(f"--check audits the whole target and takes no {', '.join(extra)}", "drop them")
        from sdcompile.phases.register.phase import check_registration
        from sdcompile.phases.register.render import audit_verdict, render_audit
        from sdcompile.rendering.output import stderr

        if import_modules:
            with stderr().status("importing the target's pattern modules under the NPU ..."):
                audit = check_registration(repo, import_modules=True, workdir=workdir)
        else:
            audit = check_registration(repo, workdir=workdir)
        emit(audit, json_, render_audit, audit_verdict)
        if not audit.passed:
            raise typer.Exit(1)
        return

    if import_modules:
        raise BadInput("--import applies to --check only", "add --check, or drop --import")
    from sdcompile.phases.register.phase import register as run_register
    from sdcompile.phases.register.render import render_register, verdict

    if not dry_run:  # recorded there after the tree is edited: a tree edited by a failing command is worse
        options.writable_workdir(workdir)

    result = run_register(
        repo, model, op, flag=flag, group=group, module=module, before=before, after=after,
        allow_missing=allow_missing, undo=undo, dry_run=dry_run, workdir=workdir,
    )
    emit(result, json_, render_register, verdict)
    if json_:  # the table shows these; in JSON mode say them on stderr too so a CI log carries them
        for v in result.ordering:
            message(f"warning: `{v.must_come_first}` (#{v.position}) should be registered before "
                    f"`{v.registered_after}` (#{v.after_position}): {v.reason}")
        for note in result.notes:
            message(f"note: {note}")
    if result.backend_calls is False:  # a custom graph pass nothing calls: phase 3 is not done
        raise typer.Exit(1)
