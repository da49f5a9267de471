"""The options of one `sdcompile run`: what its phases depend on (resume fingerprints) and what the commands it
prints repeat."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sdcompile.core.profiles.advice import DEFAULT_INFLATION as DEFAULT_MAX_INFLATION
from sdcompile.core.zoo.build_options import DEFAULT as DEFAULT_BUILD
from sdcompile.core.zoo.build_options import ModelBuild
from sdcompile.testing.numerics import DEFAULT_MIN_COSINE

DEFAULT_DTYPE = "bf16"
__all__ = ["DEFAULT_DTYPE", "DEFAULT_MAX_INFLATION", "DEFAULT_MIN_COSINE", "RunOptions"]


@dataclass(frozen=True)
class RunOptions:
    """The run's options as normalised by check_run_options; `target` is the tree every command acts on."""

    model: str | None
    model_file: str | None
    op: str
    dtype: str
    plain_cpu: bool
    name: str | None
    path: str  # scaffold's --path
    target: str  # the tree's root
    min_cosine: float
    max_inflation: float
    # Only the printed commands read these (no phase's outcome depends on them, so no fingerprint holds them):
    user_repo: Path | None = None  # --repo as given to run (None: the scratch copy)
    workdir: Path | None = None  # --workdir as given to run (None: the default, found the same way again)
    dry_run: bool = False  # the run is a preview: the runs it suggests preview too
    timeout: float | None = None  # --timeout: seconds each phase's model build and forward may take (None: default)
    build: ModelBuild = DEFAULT_BUILD  # --size, --config, --num-layers, --inputs, --model-capture (every phase's input)
