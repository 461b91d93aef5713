"""The outcome of a run: :class:`CodeResult` and the records inside it."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from quickjail.sandbox.errors import (
    CodeError,
    CodeFailed,
    CodeLinkError,
    CodeMemoryError,
    CodeTerminated,
    CodeTimeout,
)

__all__ = ["CodeResult", "ErrorInfo", "LogEntry", "RunMetrics", "Status"]

Status = Literal["success", "error", "memory", "link_error", "terminated"]
LogLevel = Literal["log", "info", "warn", "error", "debug"]

# "    at fn (file:line:col)" or "    at file:line:col"
_FRAME = re.compile(r"^\s*at (?:.*? \()?(?P<file>.*?):(?P<line>\d+):(?P<col>\d+)\)?\s*$")


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """What the program threw, with its position in the user's source.

    ``line`` and ``column`` are 1-based and point into the source the user wrote (TypeScript
    included); they come from the innermost stack frame in a file of the run's module graph.
    ``value`` holds the thrown value itself when it was not an ``Error``.
    """

    name: str
    message: str
    stack: str = ""
    line: int | None = None
    column: int | None = None
    filename: str | None = None
    value: Any = None

    def __str__(self) -> str:
        where = f" ({self.filename}:{self.line}:{self.column})" if self.line else ""
        return f"{self.name}: {self.message}{where}" if self.name else f"{self.message}{where}"


def _byte_col_to_char_col(source: str | None, line: int, col: int) -> int:
    """QuickJS counts columns in UTF-8 bytes; users count characters."""
    if source is None or source.isascii():
        return col
    lines = source.split("\n")
    if not 1 <= line <= len(lines):
        return col
    raw = lines[line - 1].encode("utf-8", "surrogatepass")
    return len(raw[: col - 1].decode("utf-8", "ignore")) + 1


def error_from_guest(info: Any, files: Mapping[str, str | None]) -> ErrorInfo:
    """Build an ErrorInfo from the guest's error record ({name, message, stack} or {thrown}).

    ``files`` maps each module name of the run to its source, to find the user's frame and
    to turn QuickJS's byte columns into character columns.
    """
    if not isinstance(info, dict):
        return ErrorInfo(name="Error", message=str(info))
    if "thrown" in info:
        thrown = info["thrown"]
        if isinstance(thrown, str):
            text = thrown
        else:
            try:
                text = json.dumps(thrown, default=repr)
            except (TypeError, ValueError):
                text = repr(thrown)
        return ErrorInfo(name="", message=f"Uncaught {text}", value=thrown)
    name = str(info.get("name", "Error"))
    message = str(info.get("message", ""))
    stack = str(info.get("stack", ""))
    line = column = None
    filename = None
    for frame in stack.splitlines():
        m = _FRAME.match(frame)
        if m and m["file"] in files:
            filename, line = m["file"], int(m["line"])
            column = _byte_col_to_char_col(files[filename], line, int(m["col"]))
            break
    return ErrorInfo(name, message, stack, line, column, filename)


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One ``console.*`` call: its level, its arguments (transferred leniently) and when."""

    level: LogLevel
    args: list[Any]
    timestamp: float


@dataclass(frozen=True, slots=True)
class RunMetrics:
    """Measurements of one run, taken on the host."""

    wall_ms: float = 0.0
    guest_cpu_ms: float = 0.0
    peak_memory_bytes: int = 0
    host_calls: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    reports: int = 0
    logs: int = 0
    slices: int = 0
    quota_refusals: int = 0
    fuel_used: int | None = None
    bytecode_hits: int = 0


@dataclass(frozen=True, slots=True)
class CodeResult:
    """Everything a run produced. Awaiting a run returns this and never raises for its outcome."""

    status: Status
    result: Any = None
    error: ErrorInfo | None = None
    reports: list[Any] = field(default_factory=list)
    logs: list[LogEntry] = field(default_factory=list)
    duration_ms: float = 0.0
    metrics: RunMetrics = field(default_factory=RunMetrics)
    reason: str | None = None
    host_errors: list[BaseException] = field(default_factory=list, repr=False)

    @property
    def ok(self) -> bool:
        """True when the status is ``"success"``."""
        return self.status == "success"

    def raise_for_status(self) -> CodeResult:
        """Return self on success; otherwise raise the matching :class:`CodeFailed` subclass."""
        if self.status == "success":
            return self
        exc: type[CodeFailed]
        if self.status == "error":
            exc = CodeError
        elif self.status == "link_error":
            exc = CodeLinkError
        elif self.status == "memory":
            exc = CodeMemoryError
        elif self.reason == "timeout":
            exc = CodeTimeout
        else:
            exc = CodeTerminated
        raise exc(self)
