"""How a model is built beyond its name: the options every model-taking command shares.

    ModelBuild()                                        # --model's default: the zoo's tiny config, or a class shrunk
    ModelBuild(size="real", num_layers=1)               # the class's default config, one block of each kind
    ModelBuild(config=Path("ckpt/"), num_layers=2)      # a real config.json (a model folder's transformer/config.json)
    ModelBuild(inputs=Path("inputs.toml"))              # forward arguments overridden (the zoo's input language)
    ModelBuild(capture=Path("flux.sdcap"))              # the class, config and inputs a pipeline's forward recorded

Paths are kept absolute, so a record made in one folder builds the same model from another. Nothing here imports
torch: the checks run before anything heavy.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from sdcompile.util.errors import BadInput

SIZES = ("tiny", "real")


@dataclass(frozen=True)
class ModelBuild:
    size: str | None = None  # "tiny" | "real"; None: tiny, or real with --config / --model-capture
    config: Path | None = None  # a config.json, or a folder holding transformer/config.json or config.json
    num_layers: int | None = None  # every block-count field at most this
    inputs: Path | None = None  # a TOML file of forward arguments, overriding the made ones
    capture: Path | None = None  # a file `sdcompile capture` wrote: the model's class, config and inputs

    def __post_init__(self) -> None:
        for name in ("config", "inputs", "capture"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, Path(value).expanduser().resolve())

    @property
    def effective_size(self) -> str:
        """The size built: a config or a capture is a real one unless --size tiny shrinks it."""
        if self.size is not None:
            return self.size
        return "real" if self.config is not None or self.capture is not None else "tiny"

    @property
    def given(self) -> bool:
        return any(v is not None for v in (self.size, self.config, self.num_layers, self.inputs, self.capture))

    def options(self) -> tuple[tuple[str, Path | str | int], ...]:
        """The command-line options that ask for this build again (after --model, in this order)."""
        pairs: list[tuple[str, Path | str | int | None]] = [
            ("--model-capture", self.capture), ("--size", self.size), ("--config", self.config),
            ("--num-layers", self.num_layers), ("--inputs", self.inputs)]
        return tuple((flag, value) for flag, value in pairs if value is not None)

    def fingerprint(self) -> dict[str, str | int | None]:
        """What a build depends on, files by content: a phase kept by `run` is run again when one changes."""
        out: dict[str, str | int | None] = {"size": self.effective_size, "num_layers": self.num_layers}
        for name in ("config", "inputs", "capture"):
            path = getattr(self, name)
            out[name] = None if path is None else _content_sha(path)
        return out

    def check(self, kind: str) -> None:
        """BadInput for a combination that cannot be built: `kind` is the model's ("zoo", "class", "file",
        "capture")."""
        if self.size is not None and self.size not in SIZES:
            from sdcompile.util.choices import UnknownChoice

            raise UnknownChoice("--size", self.size, SIZES)
        if self.num_layers is not None and self.num_layers < 1:
            raise BadInput(f"--num-layers {self.num_layers} builds no block", "pass --num-layers 1 or more")
        if kind == "file" and any(v is not None for v in (self.size, self.config, self.num_layers)):
            raise BadInput("--size, --config and --num-layers apply to --model, not to --model-file: the factory "
                           "decides its model's size", "drop them, or build the size you want in the factory")
        if kind == "capture" and self.config is not None:
            raise BadInput("--config with --model-capture: the capture holds the config it was recorded with",
                           "drop --config (or build from the config alone: --config without --model-capture)")
        if kind == "capture" and self.size == "tiny":
            raise BadInput("--size tiny with --model-capture: the captured inputs have the real model's shapes",
                           "drop --size tiny (pass --num-layers 1 to keep the build small)")
        from sdcompile.util.input_checks import check_path_text

        for flag, path in (("--config", self.config), ("--inputs", self.inputs), ("--model-capture", self.capture)):
            if path is None:
                continue
            check_path_text(str(path), flag)  # printed in commands and generated files' headers
            if not path.exists():
                raise BadInput(f"{flag} {path} does not exist", "check the path (relative to the current folder)")


def _content_sha(path: Path) -> str:
    from sdcompile.core.zoo.config_file import config_path

    try:
        return hashlib.sha256(config_path(path).read_bytes()).hexdigest()[:16]
    except (OSError, BadInput):
        return "unreadable"


DEFAULT = ModelBuild()
