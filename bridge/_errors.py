"""Exceptions of the bridge package.

::

    BridgeError                 root of everything raised by this package
    └── HostError               raised by a host function on purpose; its message is safe to
        │                       show to the sandboxed program (it becomes the JS error's message)
        ├── ArgumentError       the program called a host function with arguments it does not
        │                       accept (a JS TypeError; the function is not called)
        └── FsError             a filesystem capability refused or failed (has a Node-style code)

Any *other* exception raised by a host function reaches JavaScript only as a generic
``Error`` naming the function and the exception's class; the original stays on the host in
``CodeResult.host_errors``.
"""

from __future__ import annotations

__all__ = ["ArgumentError", "BridgeError", "HostError"]


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
