"""quickjail's sandbox: JavaScript in QuickJS-ng compiled to WebAssembly, run by wasmtime.

Every run gets a fresh instance restored from a pre-initialized snapshot; nothing survives
between runs. The guest has ECMAScript, ``console`` and ``report`` and nothing from the host
unless a :class:`~quickjail.sandbox.host.HostTable` bridges it (``quickjail.bridge.run_code``
builds one from ``imports=``/``globals=``).

    >>> from quickjail import sandbox
    >>> sandbox.run_code_sync("export default 1 + 1").result
    2

Exceptions live in :mod:`quickjail.sandbox.errors` (rooted at :class:`SandboxError`); the
host-call protocol the bridge implements lives in :mod:`quickjail.sandbox.host`.
"""

from quickjail.sandbox import errors, host
from quickjail.sandbox._execution import CodeExecution
from quickjail.sandbox._json import to_json_safe
from quickjail.sandbox._limits import OutputLimits
from quickjail.sandbox._result import CodeResult, ErrorInfo, LogEntry, RunMetrics
from quickjail.sandbox._run_code import run_code, run_code_sync, warm_up
from quickjail.sandbox._value_types import UNDEFINED, TypedArray
from quickjail.sandbox.errors import SandboxError, TransferError

__all__ = [
    "UNDEFINED",
    "CodeExecution",
    "CodeResult",
    "ErrorInfo",
    "LogEntry",
    "OutputLimits",
    "RunMetrics",
    "SandboxError",
    "TransferError",
    "TypedArray",
    "errors",
    "host",
    "run_code",
    "run_code_sync",
    "to_json_safe",
    "warm_up",
]

for _name in __all__:
    _obj = globals()[_name]
    if getattr(_obj, "__module__", "").startswith("quickjail.sandbox._"):
        _obj.__module__ = __name__
del _name, _obj
