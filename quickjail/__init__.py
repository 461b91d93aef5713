"""quickjail: run untrusted JavaScript and TypeScript in a WebAssembly sandbox.

One import root with three floors, each importing only the ones below it::

    quickjail.runtime   agent tools, threads, persistence, schema export, code mode
    quickjail.bridge    run_code with imports/globals: whitelist, validation, quotas, ReadOnlyDir
    quickjail.sandbox   the guest, the engine, runs, limits, values, results

The names most programs need are re-exported here:

    >>> import quickjail
    >>> quickjail.run_code_sync("export default 6 * 7").result
    42

``quickjail run FILE`` runs a program from the command line, ``quickjail mcp`` serves a
``run_code`` tool over stdio (the ``mcp`` extra), and ``quickjail stress`` attacks a bridge
configuration and checks the host's invariants (the ``stress`` extra); ``quickjail --help``
lists the flags. :func:`run_stress` is the same stress test for test suites (the
``quickjail_stress`` pytest fixture wraps it).

Names are imported on first use, so ``import quickjail`` (and the pytest plugin) stays cheap.
``quickjail.__version__`` is the installed version. quickjail logs to the ``quickjail`` logger
of the standard :mod:`logging` module (README "Logging"); it is silent until the application
configures logging.
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING, Any

from quickjail._version import __version__ as __version__

# a library's logger has a NullHandler: without one, Python's last-resort handler would print
# warnings to stderr of an application that never asked for quickjail's records
logging.getLogger("quickjail").addHandler(logging.NullHandler())

if TYPE_CHECKING:
    from quickjail import bridge, runtime, sandbox
    from quickjail._stress import StressReport, Violation, run_stress
    from quickjail.bridge import resume, resume_sync, run_code, run_code_sync
    from quickjail.sandbox import UNDEFINED, CodeExecution, CodeResult, to_json_safe

__all__ = [
    "UNDEFINED",
    "CodeExecution",
    "CodeResult",
    "StressReport",
    "Violation",
    "bridge",
    "resume",
    "resume_sync",
    "run_code",
    "run_code_sync",
    "run_stress",
    "runtime",
    "sandbox",
    "to_json_safe",
]

_WHERE = {
    "bridge": None,
    "runtime": None,
    "sandbox": None,
    "UNDEFINED": "quickjail.sandbox",
    "CodeExecution": "quickjail.sandbox",
    "CodeResult": "quickjail.sandbox",
    "resume": "quickjail.bridge",
    "resume_sync": "quickjail.bridge",
    "run_code": "quickjail.bridge",
    "run_code_sync": "quickjail.bridge",
    "to_json_safe": "quickjail.sandbox",
    "StressReport": "quickjail._stress",
    "Violation": "quickjail._stress",
    "run_stress": "quickjail._stress",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'quickjail' has no attribute {name!r}")
    where = _WHERE[name]
    if where is None:
        value: Any = importlib.import_module(f"quickjail.{name}")
    else:
        value = getattr(importlib.import_module(where), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*__all__, *(n for n in globals() if n.startswith("__"))})
