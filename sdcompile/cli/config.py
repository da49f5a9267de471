"""The project config (sdcompile.util.project_config) as click's `default_map`: each key becomes the default of
every option of that name that also reads the key's environment variable ($SDCOMPILE_<KEY>), so the precedence is
the same everywhere — command line, then the environment, then the file, then the built-in default — and an
option that does not read the environment (run's --repo: your tree is edited only when named) is not set by it."""

from __future__ import annotations

from typing import Any


def env_name(key: str) -> str:
    return f"SDCOMPILE_{key.upper()}"


CONFIG_FILE = "sdcompile.config"  # ctx.meta key: the config file read, for sources()


def project_defaults(group, ctx) -> dict[str, dict[str, Any]] | None:
    """{command: {parameter: value}} from the nearest config file; the root context's existing map otherwise."""
    from sdcompile.util.project_config import KEYS, load_config

    config = load_config()
    ctx.meta[CONFIG_FILE] = config.path
    if not config.values:
        return ctx.default_map
    by_param = {param: env_name(key) for key, (param, _) in KEYS.items()}
    defaults: dict[str, dict[str, Any]] = {}
    for name in group.list_commands(ctx):
        for param in group.get_command(ctx, name).params:
            if param.name in config.values and getattr(param, "envvar", None) == by_param[param.name]:
                defaults.setdefault(name, {})[param.name] = config.values[param.name]
    return {**(ctx.default_map or {}), **defaults}


def sources(command, ctx) -> dict[str, str]:
    """{parameter: where its value came from} for the options set by their environment variable or the config
    file (sdcompile.util.option_source): what a message about the value names instead of the flag."""
    from sdcompile.util.project_config import KEYS

    keys = {param: key for key, (param, _) in KEYS.items()}
    found = {}
    for param in command.params:
        source = getattr(ctx.get_parameter_source(param.name), "name", None)  # by name: typer may carry its own click
        if source == "ENVIRONMENT" and isinstance(getattr(param, "envvar", None), str):
            found[param.name] = f"${param.envvar}"
        elif source == "DEFAULT_MAP" and param.name in keys and ctx.meta.get(CONFIG_FILE) is not None:
            found[param.name] = f"{keys[param.name]} in {ctx.meta[CONFIG_FILE]}"
    return found
