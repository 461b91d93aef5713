"""The outcome of a run: :class:`CodeResult` and the records inside it."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal

from quickjail.sandbox._json import describe, fits_int_limit
from quickjail.sandbox.errors import (
    CodeError,
    CodeFailed,
    CodeLinkError,
    CodeMemoryError,
    CodePaused,
    CodeTerminated,
    CodeTimeout,
)

if TYPE_CHECKING:
    from quickjail.sandbox._continuation import Continuation

__all__ = ["CodeResult", "ErrorInfo", "LogEntry", "PausedCall", "RunMetrics", "Status"]

Status = Literal["success", "error", "memory", "link_error", "terminated", "paused"]
LogLevel = Literal["log", "info", "warn", "error", "debug"]

MAX_ERROR_NAME_CHARS: Final = 256
MAX_ERROR_MESSAGE_CHARS: Final = 64 * 1024
MAX_ERROR_STACK_CHARS: Final = 64 * 1024
MAX_STACK_FRAMES: Final = 64  # frames examined for the user's position
_MAX_POSITION_DIGITS: Final = 9


def _frame_candidates(line: str) -> list[tuple[str, int, int]]:
    """The ``(file, line, col)`` a stack line may name, in linear time.

    QuickJS writes ``at fn (file:line:col)`` or ``at file:line:col``. Function and file
    names may hold `` (`` themselves, so both the first and the last `` (`` are tried.
    """
    text = line.strip()
    if not text.startswith("at "):
        return []
    text = text[3:]
    spots = [text]
    if text.endswith(")"):
        first, last = text.find(" ("), text.rfind(" (")
        if first >= 0:
            spots.insert(0, text[first + 2 : -1])
            if last != first:
                spots.insert(1, text[last + 2 : -1])
    out: list[tuple[str, int, int]] = []
    for spot in spots:
        parts = spot.rsplit(":", 2)
        if len(parts) != 3:
            continue
        file, row, col = parts
        if all(n.isascii() and n.isdigit() and len(n) <= _MAX_POSITION_DIGITS for n in (row, col)):
            out.append((file, int(row), int(col)))
    return out


def _safe_repr(value: Any) -> str:
    """``repr(value)``, except that ints past the int-digit limit are shown by their size."""
    try:
        return repr(value)
    except ValueError:  # an int past sys.get_int_max_str_digits(), somewhere inside
        return _render(value)


def _render(value: Any) -> str:
    if type(value) is int:
        return repr(value) if fits_int_limit(value) else f"<{value.bit_length()}-bit int>"
    if type(value) is list:
        return "[" + ", ".join(_render(v) for v in value) + "]"
    if type(value) is tuple:
        return "(" + ", ".join(_render(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if type(value) is dict:
        return "{" + ", ".join(f"{_render(k)}: {_render(v)}" for k, v in value.items()) + "}"
    if type(value) is frozenset:
        return "frozenset({" + ", ".join(_render(v) for v in value) + "})"
    try:
        return repr(value)
    except ValueError:
        return f"<{type(value).__name__}>"


def _dataclass_repr(obj: Any) -> str:
    fields = dataclasses.fields(obj)
    shown = (
        f"{f.name}={_safe_repr(getattr(obj, f.name))}"
        for f in fields
        if f.repr and not (f.metadata.get("omit_empty") and not getattr(obj, f.name))
    )
    return f"{type(obj).__name__}({', '.join(shown)})"


@dataclass(frozen=True, slots=True, repr=False)
class ErrorInfo:
    """What the program threw, with its position in the user's source.

    ``line`` and ``column`` are 1-based and point into the source the user wrote (TypeScript
    included); they come from the innermost stack frame in a file of the run's module graph.
    ``value`` holds the thrown value itself when it was not an ``Error``.

    The host keeps at most ``MAX_ERROR_NAME_CHARS`` (256) characters of ``name``,
    ``MAX_ERROR_MESSAGE_CHARS`` (64 Ki) of ``message`` and ``MAX_ERROR_STACK_CHARS``
    (64 Ki) of ``stack``; a longer one ends with ``… [truncated N characters]``.
    """

    name: str
    message: str
    stack: str = ""
    line: int | None = None
    column: int | None = None
    filename: str | None = None
    value: Any = None

    __repr__ = _dataclass_repr

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
    to turn QuickJS's byte columns into character columns. Never raises, and its work is
    bounded whatever the record holds: texts are capped before they are parsed, at most
    ``MAX_STACK_FRAMES`` stack lines are examined, each in linear time, and a value is
    described without converting a huge int to decimal.
    """
    if not isinstance(info, dict):
        return ErrorInfo(name="Error", message=describe(info, MAX_ERROR_MESSAGE_CHARS))
    if "thrown" in info:
        thrown = info["thrown"]
        text = describe(thrown, MAX_ERROR_MESSAGE_CHARS - len("Uncaught "))
        # the guest names the constructor of a thrown object (read from data properties)
        name = info.get("name")
        name = describe(name, MAX_ERROR_NAME_CHARS) if isinstance(name, str) else ""
        return ErrorInfo(name=name, message=f"Uncaught {text}", value=thrown)
    name = describe(info.get("name", "Error"), MAX_ERROR_NAME_CHARS)
    message = describe(info.get("message", ""), MAX_ERROR_MESSAGE_CHARS)
    stack = describe(info.get("stack", ""), MAX_ERROR_STACK_CHARS)
    line = column = None
    filename = None
    for frame in stack.splitlines()[:MAX_STACK_FRAMES]:
        for file, row, col in _frame_candidates(frame):
            if file in files:
                filename, line = file, row
                column = _byte_col_to_char_col(files[filename], line, col)
                break
        if filename is not None:
            break
    return ErrorInfo(name, message, stack, line, column, filename)


@dataclass(frozen=True, slots=True, repr=False)
class LogEntry:
    """One ``console.*`` call: its level, its arguments (transferred leniently) and when."""

    level: LogLevel
    args: list[Any]
    timestamp: float

    __repr__ = _dataclass_repr


@dataclass(frozen=True, slots=True, repr=False)
class PausedCall:
    """A call whose host function raised :class:`~quickjail.sandbox.host.Pause`: its promise
    waits in the guest for the answer ``resume`` gives.

    Attributes:
        call_id: the call's id, the key of its answer in ``resume(answers=...)``.
        function: the host function's name (``"fs.readFile"``, ``"approve"``).
        args: the arguments as the program passed them (decoded, before validation).
        info: what the function passed to ``Pause(info)``.
    """

    call_id: int
    function: str
    args: list[Any]
    info: Any

    __repr__ = _dataclass_repr


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
    timers_fired: int = 0  # timer callbacks run (each repeat of an interval counts)
    timers_cancelled: int = 0  # timers still pending when the entry settled (README "Timers")


@dataclass(frozen=True, slots=True, repr=False)
class CodeResult:
    """Everything a run produced. Awaiting a run returns this and never raises for its outcome.

    Its ``repr`` never raises either: an int past the int-digit limit shows as
    ``<N-bit int>``. With ``status == "paused"`` (a host function raised ``Pause``),
    ``paused`` lists the paused calls and ``continuation.seal(key, context)`` gives the bytes
    ``quickjail.resume`` continues; ``paused`` shows in the ``repr`` only when not empty.
    """

    status: Status
    result: Any = None
    error: ErrorInfo | None = None
    reports: list[Any] = field(default_factory=list)
    logs: list[LogEntry] = field(default_factory=list)
    duration_ms: float = 0.0
    metrics: RunMetrics = field(default_factory=RunMetrics)
    reason: str | None = None
    host_errors: list[BaseException] = field(default_factory=list, repr=False)
    # the id the run's log records name (README "Logging"); None for a run that never started
    run_id: str | None = field(default=None, repr=False, compare=False)
    # status "paused": the calls that paused it, and the parked guest (README "Durable runs")
    paused: list[PausedCall] = field(default_factory=list, metadata={"omit_empty": True})
    continuation: Continuation | None = field(default=None, repr=False, compare=False)

    __repr__ = _dataclass_repr

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
        elif self.status == "paused":
            exc = CodePaused
        elif self.reason == "timeout":
            exc = CodeTimeout
        else:
            exc = CodeTerminated
        raise exc(self)
