"""The public Python API: one function per command, the same core the CLI wraps (docs/api.md).

Each is the phase's own function under the command's name; its keyword arguments are the command's options and
it returns the result dataclass the command renders (`sdcompile.serialize.dumps` gives its --json). Errors are
`sdcompile.errors.SdcompileError` subclasses, each with the exit code the CLI would use.
"""

from __future__ import annotations

from sdcompile.phases.analyze import analyze
from sdcompile.phases.backends import collect_backends as backends
from sdcompile.phases.copy_audit import run_copy_audit as copy_audit
from sdcompile.phases.debug import run_debug as debug
from sdcompile.phases.doctor import run_doctor as doctor
from sdcompile.phases.integrate import run_integrate as integrate
from sdcompile.phases.profile import run_profile as profile
from sdcompile.phases.register import check_registration, register
from sdcompile.phases.run import run_lifecycle as run
from sdcompile.phases.scaffold import scaffold
from sdcompile.phases.status import collect_status as status
from sdcompile.phases.verify import run_verify as verify

__all__ = ["analyze", "backends", "check_registration", "copy_audit", "debug", "doctor", "integrate", "profile",
           "register", "run", "scaffold", "status", "verify"]
