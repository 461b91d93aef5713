"""Exceptions of the sandbox package (``quickjail.sandbox.errors``).

Awaiting a run never raises for what the guest program did: the outcome is data in
:class:`~quickjail.sandbox.CodeResult`. These exceptions are for misuse of the API, for a
broken guest build, and for callers who ask for one with :meth:`CodeResult.raise_for_status`::

    SandboxError                         root of everything raised by this package
    ├── GuestBuildError                  the guest wasm is missing or cannot be loaded
    ├── TransferError                    a value cannot cross the boundary; TypeError too
    ├── HostCallRefused                  a host-call quota refused a call (sandbox.host)
    ├── ContinuationError                a sealed continuation cannot be resumed; ValueError too
    ├── ResumeError                      resume()'s host functions or answers do not fit the
    │                                    paused run; ValueError too
    └── CodeFailed                       raise_for_status(): the run did not succeed
        ├── CodeError                    the program threw (status "error")
        ├── CodeLinkError                a module or export could not be linked ("link_error")
        ├── CodeMemoryError              the memory limit was hit ("memory"); MemoryError too
        ├── CodePaused                   a host function paused the run ("paused")
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
    "CodePaused",
    "CodeTerminated",
    "CodeTimeout",
    "ContinuationError",
    "GuestBuildError",
    "HostCallRefused",
    "ResumeError",
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


class ContinuationError(SandboxError, ValueError):
    """A sealed continuation was refused before anything ran; the message says why.

    ``reason`` is one of ``"too_large"``, ``"truncated"``, ``"tampered"`` (also a wrong key:
    the MAC does not match), ``"wrong_key"``, ``"context"`` (sealed for another context),
    ``"version"`` (another format version), ``"build"`` (another guest build) or
    ``"expired"`` (older than ``max_age``).
    """

    def __init__(self, message: str, *, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class ResumeError(SandboxError, ValueError):
    """``resume()`` was given host functions or answers that do not fit the paused run (a
    missing or extra function, an answer for an unknown call, a paused call left unanswered)."""


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


class CodePaused(CodeFailed):
    """A host function paused the run; ``result.continuation`` resumes it."""


class CodeTerminated(CodeFailed):
    """The run was stopped by terminate(), cancellation or a limit."""


class CodeTimeout(CodeTerminated, TimeoutError):
    """The run's deadline passed."""
