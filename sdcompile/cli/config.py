"""The project config (sdcompile.util.project_config) as click's `default_map`: each key becomes the default of
every option of that name that also reads the key's environment variable ($SDCOMPILE_<KEY>), so the precedence is
the same everywhere — command line, then the environment, then the file, then the built-in default — and an
option that does not read the environment (run's --repo: your tree is edited only when named) is not set by it."""

from __future__ import annotations

from typing import Any


def env_name(key: str) -> str:
    return f"SDCOMPILE_{key.upper()}"


def project_defaults(group, ctx) -> dict[str, dict[str, Any]] | None:
    """{command: {parameter: value}} from the nearest config file; the root context's existing map otherwise."""
    from sdcompile.util.project_config import KEYS, load_config

    config = load_config()
    if not config.values:
        return ctx.default_map
    by_param = {param: env_name(key) for key, (param, _) in KEYS.items()}
    defaults: dict[str, dict[str, Any]] = {}
    for name, command in group.commands.items():
        for param in command.params:
            if param.name in config.values and getattr(param, "envvar", None) == by_param[param.name]:
                defaults.setdefault(name, {})[param.name] = config.values[param.name]
    return {**(ctx.default_map or {}), **defaults}
