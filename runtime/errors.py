"""Errors and warnings of the tool runtime.

Every exception the runtime raises on purpose derives from one root, so callers can catch the
whole family with one clause; where a builtin carries the same meaning, the class subclasses it
too (``except ValueError`` still works):

    ToolRuntimeError
    ├── ToolDefinitionError(ValueError)        a tool cannot be defined as written
    ├── ProviderFormatError(ValueError)        a provider format cannot express a tool or result
    ├── SecretKeyError                         a secret is set or read without a usable secret_key
    ├── ThreadPathError(ValueError)            a thread file path fails validation
    ├── ThreadFileNotFoundError(FileNotFoundError)
    ├── ScopedVariableError(PermissionError)   a tool reads a scoped variable it did not declare
    ├── StoreError                             the database cannot be opened or migrated
    └── RuntimeClosedError(RuntimeError)       the runtime was used after it was closed

    ToolNameWarning(UserWarning)               a tool name is not snake_case of 1–64 characters

Failures *of a tool* (it raised, returned the wrong type, got invalid arguments, missed a required
variable) are never raised: they become ``ToolResult(status="error")`` so a batch never halts.
"""

from __future__ import annotations

__all__ = [
    "ProviderFormatError",
    "RuntimeClosedError",
    "ScopedVariableError",
    "SecretKeyError",
    "StoreError",
    "ThreadFileNotFoundError",
    "ThreadPathError",
    "ToolDefinitionError",
    "ToolNameWarning",
    "ToolRuntimeError",
]


class ToolRuntimeError(Exception):
    """Root of every error the runtime raises on purpose."""


class ToolDefinitionError(ToolRuntimeError, ValueError):
    """A tool definition is invalid (description, argument types, signature, duplicate name)."""


class ProviderFormatError(ToolRuntimeError, ValueError):
    """A tool or result cannot be expressed in the requested provider format."""


class SecretKeyError(ToolRuntimeError):
    """A secret was set or read while no (or a wrong) ``secret_key`` is configured."""


class ThreadPathError(ToolRuntimeError, ValueError):
    """A virtual path of the thread's files is malformed or tries to traverse."""


class ThreadFileNotFoundError(ToolRuntimeError, FileNotFoundError):
    """A thread file does not exist."""


class ScopedVariableError(ToolRuntimeError, PermissionError):
    """A tool read a scoped variable that only the tools declaring it may read."""


class StoreError(ToolRuntimeError):
    """The database cannot be opened or migrated (e.g. written by a newer version)."""


class RuntimeClosedError(ToolRuntimeError, RuntimeError):
    """The runtime (and its database) was used after it was closed."""


class ToolNameWarning(UserWarning):
    """A tool name is not snake_case of 1–64 characters; it is accepted but discouraged."""
