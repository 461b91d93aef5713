"""Errors and warnings of the tool runtime.

Every exception the runtime raises on purpose derives from one root, so callers can catch the
whole family with one clause; where a builtin carries the same meaning, the class subclasses it
too (``except ValueError`` still works):

    ToolRuntimeError
    ├── ToolDefinitionError(ValueError)        a tool cannot be defined as written
    ├── ToolValidationError(ValueError)        ``tool.execute`` input or output fails its schema
    ├── ToolExecutionError                     ``tool.execute``: the tool reported a failure
    ├── ProviderFormatError(ValueError)        a provider format cannot express a tool or result
    ├── SecretKeyError                         a secret is set or read without a usable secret_key
    ├── ThreadPathError(ValueError)            a thread file path fails validation
    ├── ThreadFileNotFoundError(FileNotFoundError)
    ├── MissingVariablesError(ValueError)      a thread lacks variables its tools require
    ├── ScopedVariableError(PermissionError)   (no longer raised; see below)
    ├── StorageError                           a ``state.storage`` statement failed or was refused
    ├── StoreError                             the database cannot be opened or migrated
    ├── ThreadQuotaError                       a write would take a thread past its stored bytes
    ├── ApprovalError                          an approval cannot be decided or carried out
    │   ├── UnknownApprovalError(LookupError)  no such approval on this thread
    │   ├── ApprovalDecidedError               decided already (approve/reject twice, or raced)
    │   └── StoredRunError                     a stored pending call or run fails its checks
    ├── ConnectorError                         a connector cannot reach or describe its source
    └── RuntimeClosedError(RuntimeError)       the runtime was used after it was closed

    ToolNameWarning(UserWarning)               a tool name is not snake_case of 1–64 characters

``ValidationIssue`` is the shape of one item of ``ToolValidationError.issues``.

Failures *of a tool* (it raised, returned the wrong type, got invalid arguments, missed a required
variable) are never raised by ``tool.call`` or a batch: they become ``ToolResult(status="error")``
so a batch never halts. ``tool.execute`` (the StandardTool form) raises them instead, as
:class:`ToolValidationError` or :class:`ToolExecutionError`; ``tool.formatted()`` turns them back
into data.
"""

from __future__ import annotations

from typing import TypedDict

__all__ = [
    "ApprovalDecidedError",
    "ApprovalError",
    "ConnectorError",
    "MissingVariablesError",
    "ProviderFormatError",
    "RuntimeClosedError",
    "ScopedVariableError",
    "SecretKeyError",
    "StorageError",
    "StoreError",
    "StoredRunError",
    "ThreadFileNotFoundError",
    "ThreadPathError",
    "ThreadQuotaError",
    "ToolDefinitionError",
    "ToolExecutionError",
    "ToolNameWarning",
    "ToolRuntimeError",
    "ToolValidationError",
    "UnknownApprovalError",
    "ValidationIssue",
]


class ToolRuntimeError(Exception):
    """Root of every error the runtime raises on purpose."""


class ToolDefinitionError(ToolRuntimeError, ValueError):
    """A tool definition is invalid (description, argument types, signature, duplicate name)."""


class ValidationIssue(TypedDict):
    """One problem a validation found, as the StandardTool RFC's issues carry it.

    Attributes:
        path: The keys from the validated value's root to the offending value: strings for
            object keys, integers for array indices; ``[]`` for the value itself.
        message: What is wrong there, e.g. ``expected a number (got a string "21")``.
    """

    path: list[str | int]
    message: str


class ToolValidationError(ToolRuntimeError, ValueError):
    """``tool.execute``'s input or output does not match the tool's schema.

    Attributes:
        target: ``"input"`` or ``"output"``.
        issues: One :class:`ValidationIssue` per problem (``{"path": ["a", 0], "message":
            ...}``), at most a bounded number of them.
    """

    def __init__(self, target: str, issues: list[ValidationIssue], message: str) -> None:
        """Carry the target and the issues; ``message`` is the human-readable summary."""
        super().__init__(message)
        self.target = target
        self.issues = issues


class ToolExecutionError(ToolRuntimeError):
    """``tool.execute``: the tool ran (or could not) and reported a failure.

    Attributes:
        result: The error ``ToolResult`` (its ``error`` is this exception's message).
    """

    def __init__(self, result: object, message: str) -> None:
        """Carry the error result."""
        super().__init__(message)
        self.result = result


class ProviderFormatError(ToolRuntimeError, ValueError):
    """A tool or result cannot be expressed in the requested provider format."""


class SecretKeyError(ToolRuntimeError):
    """A secret was set or read while no (or a wrong) ``secret_key`` is configured."""


class ThreadPathError(ToolRuntimeError, ValueError):
    """A virtual path of the thread's files is malformed or tries to traverse."""


class ThreadFileNotFoundError(ToolRuntimeError, FileNotFoundError):
    """A thread file does not exist."""


class MissingVariablesError(ToolRuntimeError, ValueError):
    """Creating or opening a thread found required variables (tenvs) without a value.

    Attributes:
        missing: ``(variable, tool, description)`` for each, in tool order.
    """

    def __init__(self, missing: list[tuple[str, str, str]]) -> None:
        """List every missing variable in one message."""
        self.missing = missing
        lines = [
            f"  {name} (required by tool {tool!r})" + (f": {desc}" if desc else "")
            for name, tool, desc in missing
        ]
        plural = "s" if len(missing) != 1 else ""
        super().__init__(
            f"the thread is missing {len(missing)} required variable{plural} "
            "(set them on the prompt, the agent or the thread):\n" + "\n".join(lines)
        )


class ScopedVariableError(ToolRuntimeError, PermissionError):
    """No longer raised: ``scoped`` now blocks inheritance from a parent thread instead.

    Kept so code catching it still imports.
    """


class StorageError(ToolRuntimeError):
    """A ``state.storage.sql`` statement failed, was refused, or went past a limit."""


class StoreError(ToolRuntimeError):
    """The database cannot be opened or migrated (e.g. written by a newer version)."""


class ThreadQuotaError(ToolRuntimeError):
    """A write would take a thread past ``Runtime(max_thread_bytes=...)`` of stored data.

    Nothing of that write is stored. A code-mode program's nested call gets an error result
    instead (the call does not run); anywhere else the write raises this.
    """


class ApprovalError(ToolRuntimeError):
    """An approval cannot be decided or carried out (see the subclasses)."""


class UnknownApprovalError(ApprovalError, LookupError):
    """No approval of that id waits on this thread (unknown, or another thread's)."""


class ApprovalDecidedError(ApprovalError):
    """The approval was decided already: approved or rejected twice, or by a concurrent call.

    Nothing ran for the second decision.
    """


class StoredRunError(ApprovalError):
    """A pending call or paused program stored in the database fails its checks (wrong
    ``secret_key``, edited by hand, or made by another guest build); nothing was run."""


class ConnectorError(ToolRuntimeError):
    """A connector (an MCP server, an OpenAPI service) cannot be reached, started or listed,
    or describes itself in a way the runtime refuses; the message names the connector."""


class RuntimeClosedError(ToolRuntimeError, RuntimeError):
    """The runtime (and its database) was used after it was closed."""


class ToolNameWarning(UserWarning):
    """A tool name is not snake_case of 1–64 characters; it is accepted but discouraged."""
