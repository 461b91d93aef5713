"""Exceptions of the bridge package.

::

    BridgeError                 root of everything raised by this package
    ├── HostError               raised by a host function on purpose; its message is safe to
    │                           show to the sandboxed program (it becomes the JS error's message)
    │   ├── ArgumentError       the program called a host function with arguments it does not
    │   │                       accept (a JS TypeError; the function is not called)
    │   ├── FsError             a filesystem capability refused or failed (has a Node-style code)
    │   └── FetchError          a bridged fetch refused or failed (a TypeError in JS, as fetch's
    │                           network errors are)
    ├── Pause                   raised by a host function on purpose: the run pauses at this
    │                           call (a signal, not an error; also sandbox.host.Pause)
    └── ResumeError             resume() got host functions or answers that do not fit the
                                paused run (also sandbox.errors.ResumeError, a ValueError)

Any *other* exception raised by a host function reaches JavaScript only as a generic
``Error`` naming the function and the exception's class; the original stays on the host in
``CodeResult.host_errors``.
"""

from __future__ import annotations

from typing import Any

from quickjail.sandbox.errors import ResumeError as _SandboxResumeError
from quickjail.sandbox.host import Pause as _SandboxPause

__all__ = ["ArgumentError", "BridgeError", "FetchError", "HostError", "Pause", "ResumeError"]


class BridgeError(Exception):
    """Root of the bridge package's exceptions."""


class HostError(BridgeError):
    """An error a host function raises on purpose, with a message safe to show to JS.

    Attributes:
        js_name: the JavaScript error class name the program sees (default ``"Error"``).
    """

    js_name: str = "Error"

    def __init__(self, message: str, *, js_name: str | None = None) -> None:
        super().__init__(message)
        if js_name is not None:
            self.js_name = js_name


class ArgumentError(HostError, TypeError):
    """The program called a host function with arguments it does not accept."""

    js_name = "TypeError"


class FetchError(HostError):
    """A :class:`~quickjail.bridge.Fetch` request was refused or failed: the program's
    ``fetch`` rejects with a ``TypeError`` carrying this message (why, never a secret)."""

    js_name = "TypeError"


class ResumeError(BridgeError, _SandboxResumeError):
    """``resume()`` was given host functions or answers that do not fit the paused run: a
    missing or extra host function, an answer for a call that is not paused, a paused call
    left unanswered. Raised before anything runs; a ``ValueError`` too."""


class Pause(BridgeError, _SandboxPause):
    """Raised by a host function (sync or async) to pause the run at this call.

    The call's promise stays pending in the program. Once the guest waits for nothing else
    (every other async call in flight has settled; pending timers are saved with their
    remaining delay), the run ends with ``status == "paused"``, ``CodeResult.paused`` (one
    entry per paused call: id, function, arguments, ``info``) and ``CodeResult.continuation``;
    :func:`~quickjail.bridge.resume` continues it with an answer for each call. A function
    marked :func:`~quickjail.bridge.synchronous` cannot wait: its Pause is a ``TypeError`` in
    the program.

    Attributes:
        info: JSON-able data for whoever decides the answer; it travels in the continuation.
    """

    def __init__(self, info: Any = None) -> None:
        _SandboxPause.__init__(self, info)
