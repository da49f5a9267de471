"""`--config PATH`: a diffusers config.json, or a model folder holding `transformer/config.json` (a pipeline's) or
`config.json` (a transformer's own), read without importing torch or diffusers.

    class_name, config = read_config(Path("FLUX.1-dev"))   # ("FluxTransformer2DModel", {"num_layers": 19, ...})
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sdcompile.util.errors import BadInput

_IN_FOLDER = ("transformer/config.json", "config.json")


def config_path(path: Path) -> Path:
    """The config file `path` names: itself, or the first of transformer/config.json and config.json in a folder."""
    if not path.is_dir():
        return path
    for name in _IN_FOLDER:
        if (path / name).is_file():
            return path / name
    raise BadInput(f"--config {path} is a folder with neither {' nor '.join(_IN_FOLDER)}",
                   "pass the transformer's config.json, or the model folder that holds it")


def read_config(path: Path) -> tuple[str | None, dict[str, Any]]:
    """(the `_class_name` it records, the constructor arguments it holds: every key not starting with `_`)."""
    file = config_path(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"cannot read --config {file}: {exc}", "pass a readable config.json") from exc
    except json.JSONDecodeError as exc:
        raise BadInput(f"--config {file} is not JSON (line {exc.lineno}: {exc.msg})",
                       "pass a diffusers config.json") from exc
    if not isinstance(data, dict):
        raise BadInput(f"--config {file} holds a JSON {type(data).__name__}, not an object of constructor "
                       "arguments", "pass a diffusers config.json")
    class_name = data.get("_class_name")
    return (class_name if isinstance(class_name, str) else None,
            {k: v for k, v in data.items() if not k.startswith("_")})


def constructor_arguments(cls, config: dict[str, Any]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """(the entries of `config` that `cls`'s constructor takes, the names of those it does not: a config written by
    another diffusers release may hold fields this one dropped)."""
    import inspect

    params = inspect.signature(cls.__init__).parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return dict(config), ()
    taken = {k: v for k, v in config.items() if k in params}
    return taken, tuple(sorted(k for k in config if k not in params))
