"""Exceptions of the sandbox package (``quickjail.sandbox.errors``).

Awaiting a run never raises for what the guest program did: the outcome is data in
:class:`~quickjail.sandbox.CodeResult`. These exceptions are for misuse of the API, for a
broken guest build, and for callers who ask for one with :meth:`CodeResult.raise_for_status`::

    SandboxError                         root of everything raised by this package
    ├── GuestBuildError                  the guest wasm is missing or cannot be loaded
    ├── TransferError                    a value cannot cross the boundary; TypeError too
    ├── HostCallRefused                  a host-call quota refused a call (sandbox.host)
    └── CodeFailed                       raise_for_status(): the run did not succeed
        ├── CodeError                    the program threw (status "error")
        ├── CodeLinkError                a module or export could not be linked ("link_error")
        ├── CodeMemoryError              the memory limit was hit ("memory"); MemoryError too
        └── CodeTerminated               terminate() or a limit ended it ("terminated")
            └── CodeTimeout              the deadline passed; TimeoutError too

Bad arguments raise the builtins ``TypeError`` and ``ValueError`` before anything runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from quickjail.sandbox._result import CodeResult

__all__ = [
    "CodeError",
    "CodeFailed",
    "CodeLinkError",
    "CodeMemoryError",
    "CodeTerminated",
    "CodeTimeout",
    "GuestBuildError",
    "HostCallRefused",
    "SandboxError",
    "TransferError",
]


class SandboxError(Exception):
    """Root of the sandbox package's exceptions."""


class GuestBuildError(SandboxError):
    """The guest module is missing, stale or cannot be compiled; rebuild it."""


class HostCallRefused(SandboxError):
    """A host-call quota refused a call (raised by :class:`~quickjail.sandbox.host.HostCalls`).

    The program sees a JS error of class ``js_name`` with this message; the run's
    ``metrics.quota_refusals`` counts it.
    """

    def __init__(self, message: str, *, js_name: str = "RangeError") -> None:
        super().__init__(message)
        self.js_name = js_name


class TransferError(SandboxError, TypeError):
    """A value cannot cross the boundary; the message names where it sits in the value."""


class CodeFailed(SandboxError):
    """A run did not succeed; ``result`` holds the whole outcome."""

    def __init__(self, result: CodeResult) -> None:
        self.result = result
        err = result.error
        detail = f"{err.name}: {err.message}" if err else (result.reason or result.status)
        super().__init__(f"run ended with status {result.status!r}: {detail}")


class CodeError(CodeFailed):
    """The program threw and nothing caught it."""


class CodeLinkError(CodeFailed):
    """A module, specifier or export could not be resolved."""


class CodeMemoryError(CodeFailed, MemoryError):
    """The run hit its memory limit."""


class CodeTerminated(CodeFailed):
    """The run was stopped by terminate(), cancellation or a limit."""


class CodeTimeout(CodeTerminated, TimeoutError):
    """The run's deadline passed."""
