"""The public Python API: one function per command, the same core the CLI wraps (docs/api.md).

Each is the phase's own function under the command's name; its keyword arguments are the command's options and
it returns the result dataclass the command renders (`sdcompile.util.serialize.dumps` gives its --json). Errors are
`sdcompile.util.errors.SdcompileError` subclasses, each with the exit code the CLI would use.
"""

from __future__ import annotations

from sdcompile.core.zoo.recorder import capture
from sdcompile.lifecycle.pipeline import run_lifecycle as run
from sdcompile.phases.analyze.phase import analyze
from sdcompile.phases.backends.phase import collect_backends as backends
from sdcompile.phases.copy_audit.phase import run_copy_audit as copy_audit
from sdcompile.phases.debug.phase import run_debug as debug
from sdcompile.phases.doctor.phase import run_doctor as doctor
from sdcompile.phases.integrate.phase import run_integrate as integrate
from sdcompile.phases.profile.phase import run_profile as profile
from sdcompile.phases.register.phase import check_registration, register
from sdcompile.phases.scaffold.phase import scaffold
from sdcompile.phases.status.phase import collect_status as status
from sdcompile.phases.verify.phase import run_verify as verify

__all__ = ["analyze", "backends", "capture", "check_registration", "copy_audit", "debug", "doctor", "integrate",
           "profile", "register", "run", "scaffold", "status", "verify"]
