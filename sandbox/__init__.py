"""quickjail's sandbox: JavaScript in QuickJS-ng compiled to WebAssembly, run by wasmtime.

Every run gets a fresh instance restored from a pre-initialized snapshot; nothing survives
between runs. The guest has ECMAScript, ``console`` and ``report`` and nothing else unless the
caller bridges it with ``imports`` or ``globals``.

    >>> from quickjail import sandbox
    >>> sandbox.run_code_sync("export default 1 + 1").result
    2
"""

from quickjail.sandbox._errors import (
    CodeError,
    CodeFailed,
    CodeLinkError,
    CodeMemoryError,
    CodeTerminated,
    CodeTimeout,
    GuestBuildError,
    SandboxClosedError,
    SandboxError,
)
from quickjail.sandbox._limits import Limits
from quickjail.sandbox._result import CodeResult, ErrorInfo, LogEntry, RunMetrics
from quickjail.sandbox._run import CodeExecution
from quickjail.sandbox._sandbox import Sandbox, run_code, run_code_sync, warm_up
from quickjail.sandbox._values import UNDEFINED, TransferError, to_json_safe

__all__ = [
    "UNDEFINED",
    "CodeError",
    "CodeExecution",
    "CodeFailed",
    "CodeLinkError",
    "CodeMemoryError",
    "CodeResult",
    "CodeTerminated",
    "CodeTimeout",
    "ErrorInfo",
    "GuestBuildError",
    "Limits",
    "LogEntry",
    "RunMetrics",
    "Sandbox",
    "SandboxClosedError",
    "SandboxError",
    "TransferError",
    "run_code",
    "run_code_sync",
    "to_json_safe",
    "warm_up",
]
