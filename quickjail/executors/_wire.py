"""The messages between a caller and a remote worker, and how they are framed.

A *frame* is ``u32 head_len | head | (u32 len | payload)*``, little-endian: ``head`` is a value
message (the sandbox's codec, never pickle) of the list ``[kind, *fields]`` and each payload
is a value message of its own (a guest value: a report, a host call's arguments, a result),
so guest values cross with the exact codec and nesting they had. On a pipe each frame is
preceded by its ``u32`` length (:func:`read_frame`), checked against ``MAX_FRAME_BYTES``
before the body is read.

Caller → worker: ``start`` (the checked options and the prepared program; for a resumed run
also its continuation and answers), ``reply`` (a host call's outcome), ``pause`` (the host
function paused the call: :class:`~quickjail.sandbox.host.Pause` and its info), ``terminate``.
Worker → caller: ``report``, ``call`` (a host call), ``result`` (for a paused run with its
continuation, see :mod:`quickjail.executors._durable`).
A pool's worker also says ``ready`` once, when its engine is warm, and takes its ``terminate``
frames on a control pipe of their own (:func:`stop_frame`), so a run may occupy the thread that
reads the main pipe.

The worker is hostile to the caller: :func:`unpack` and the ``*_from`` readers check every
field's type and bound and raise :class:`ProtocolError` for anything else; the caller's
payloads are decoded with the run's :class:`~quickjail.sandbox._values.DecodeBudget`.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from quickjail.sandbox import _values
from quickjail.sandbox._abi import FN_KEY as _FN_KEY
from quickjail.sandbox._abi import LOG_LEVELS
from quickjail.sandbox._limits import OutputLimits
from quickjail.sandbox._options import RunOptions
from quickjail.sandbox._program import Program
from quickjail.sandbox._result import (
    MAX_ERROR_MESSAGE_CHARS,
    MAX_ERROR_NAME_CHARS,
    MAX_ERROR_STACK_CHARS,
    CodeResult,
    ErrorInfo,
    LogEntry,
)
from quickjail.sandbox.errors import TransferError
from quickjail.sandbox.host import HostFunction, HostTable

__all__ = [
    "CALL",
    "CONTROL_FD_ENV",
    "MAX_FRAME_BYTES",
    "MAX_HEAD_BYTES",
    "PAUSE",
    "READY",
    "REPLY",
    "REPORT",
    "RESULT",
    "START",
    "TERMINATE",
    "ProtocolError",
    "RemoteResult",
    "Start",
    "StartHeads",
    "framed",
    "looks_like_result",
    "pack",
    "re_encoded",
    "read_frame",
    "result_frame",
    "result_from",
    "start_frame",
    "start_from",
    "stop_frame",
    "stop_from",
    "unpack",
]

START: Final = "start"
REPLY: Final = "reply"
PAUSE: Final = "pause"
TERMINATE: Final = "terminate"
REPORT: Final = "report"
CALL: Final = "call"
RESULT: Final = "result"
READY: Final = "ready"

CONTROL_FD_ENV: Final = "QUICKJAIL_WORKER_CONTROL_FD"
"""The environment variable telling a pool's worker the fd of its control pipe."""
MAX_CONTROL_FRAME_BYTES: Final = 64 * 1024
"""The largest frame on the control pipe (a ``terminate`` with its reason)."""

MAX_HEAD_BYTES: Final = 4 * 2**20
"""The largest head a worker may send (error texts, metrics, host error texts: far less)."""
MAX_FRAME_BYTES: Final = 2 * _values.MAX_TRANSFER_BYTES + MAX_HEAD_BYTES
"""The largest frame a worker may send: a result and its logs at the transfer cap each."""
MAX_REASON_CHARS: Final = 256
MAX_HOST_ERROR_CHARS: Final = 4096
"""How much of each worker-side host error's text crosses (``RuntimeError(text)``)."""
MAX_CALL_ID: Final = 2**53 - 1
REENCODE_BYTES: Final = 64 * 1024
"""Bytes a worker may send past an output limit's quarter of slack (see :func:`re_encoded`)."""
_LOG_ENTRY_BYTES: Final = 128  # a log entry's level, timestamp and framing; a rejection's text
_HEAD_BUDGET: Final = 16 * MAX_HEAD_BYTES  # what decoding a head may allocate
_SMALL_HEAD: Final = 4096  # bytes: a head this short is copied out for the quick decode
_U32 = struct.Struct("<I")
_MSG_HEAD = struct.Struct("<BI")  # a value message: flags, JSON length
_EMPTY_LIST: Final = _values.encode([])
"""The value message of ``[]``: a result without tail reports or logs sends and reads it as is."""
_STATUSES: Final = frozenset({"success", "error", "memory", "link_error", "terminated", "paused"})
_INT_METRICS: Final = (
    "peak_memory_bytes",
    "host_calls",
    "bytes_in",
    "bytes_out",
    "reports",
    "logs",
    "slices",
    "quota_refusals",
    "bytecode_hits",
    "timers_fired",
    "timers_cancelled",
)
_METRIC_KEYS: Final = frozenset({*_INT_METRICS, "wall_ms", "guest_cpu_ms", "fuel_used"})
_LIMIT_FIELDS: Final = (
    "max_logs",
    "max_log_bytes",
    "max_reports",
    "max_report_bytes",
    "max_rejections",
    "max_result_bytes",
)


class ProtocolError(Exception):
    """A frame broke the protocol (its size, its framing, a field, the order of messages)."""


def pack(
    kind: str,
    fields: Sequence[Any] = (),
    payloads: Sequence[bytes | _values.Message] = (),
    *,
    plain_shape: bool = False,
) -> bytes:
    """One frame: the head ``[kind, *fields]`` and the payloads (value messages).

    ``plain_shape``: the head's dict keys are ours and its floats are never -0 (a result's
    head), so it is not walked for what the codec would tag; what JSON cannot hold (NaN, a
    lone surrogate, a type of its own) still goes through the codec.
    """
    head = _encode_head([kind, *fields], kind, plain_shape)
    parts = [_U32.pack(len(head)), head]
    for payload in payloads:
        parts.append(_U32.pack(len(payload)))
        if isinstance(payload, bytes):
            parts.append(payload)
        else:
            parts.extend(payload.buffers())
    return b"".join(parts)


_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
_SAFE_INT: Final = 2**53 - 1
_HEAD_DEPTH: Final = 8  # our heads nest 4 deep at most
_NOT_PLAIN_KEYS: Final = ("\0", _FN_KEY)


def _plain(value: Any, depth: int) -> bool:
    """Whether ``value`` is plain JSON the codec would send untagged: str keys not starting
    with NUL, safe ints, finite floats other than -0, short nesting (the heads' shape).
    Loops rather than generator expressions, and strs and ints checked in the loop: it runs
    on every frame."""
    t = type(value)
    if t is str or value is None or t is bool:
        return True
    if t is int:
        return bool(-_SAFE_INT <= value <= _SAFE_INT)
    if t is float:
        return math.isfinite(value) and not (value == 0 and math.copysign(1, value) < 0)
    if depth >= _HEAD_DEPTH:
        return False
    if t is list or t is tuple:
        items: Any = value
    elif t is dict:
        for k in value:
            if type(k) is not str or k.startswith(_NOT_PLAIN_KEYS):
                return False
        items = value.values()
    else:
        return False
    for v in items:
        tv = type(v)
        if tv is str:
            continue
        if tv is int:
            if not -_SAFE_INT <= v <= _SAFE_INT:
                return False
        elif not _plain(v, depth + 1):
            return False
    return True


def _encode_head(head: list[Any], kind: str, plain_shape: bool = False) -> bytes:
    """A frame head as a value message: plain JSON straight from the C encoder when it is
    plain (nearly always: it is ours), else through the codec's general encoder."""
    if plain_shape or _plain(head, 0):
        try:
            data = _dumps(head).encode("utf-8")
        except (UnicodeEncodeError, ValueError, TypeError):  # lone surrogates, NaN, a type
            pass
        else:
            if len(data) <= _values.MAX_TRANSFER_BYTES:
                return _MSG_HEAD.pack(0, len(data)) + data + b"\0\0\0\0"
    return _values.encode(head, path=kind)


def unpack(frame: bytes, *, head_cap: int = MAX_HEAD_BYTES) -> tuple[str, list[Any], list[bytes]]:
    """Split a frame into its kind, head fields and payloads (not decoded).

    Raises:
        ProtocolError: bad framing, a head over ``head_cap`` or not ``[kind: str, ...]``.
    """
    view = memoryview(frame)
    if len(view) < 4:
        raise ProtocolError("a frame shorter than its head length")
    (head_len,) = _U32.unpack_from(view, 0)
    if head_len > head_cap or 4 + head_len > len(view):
        raise ProtocolError(f"a frame head of {head_len} bytes (at most {head_cap})")
    raw: bytes | memoryview = view[4 : 4 + head_len]
    if head_len <= _SMALL_HEAD:
        raw = bytes(raw)  # a short message as bytes takes the codec's quick path
    try:
        head = _values.decode(raw, budget=_values.DecodeBudget(_HEAD_BUDGET))
    except TransferError as exc:
        raise ProtocolError(f"a frame head that does not decode ({exc})") from None
    if not isinstance(head, list) or not head or not isinstance(head[0], str):
        raise ProtocolError("a frame head that is not [kind, ...]")
    return head[0], head[1:], _payloads(view, 4 + head_len)


def _payloads(view: memoryview, pos: int) -> list[bytes]:
    """The payloads of a frame from ``pos`` on (its head's end)."""
    payloads: list[bytes] = []
    while pos < len(view):
        if pos + 4 > len(view):
            raise ProtocolError("a payload shorter than its length")
        (n,) = _U32.unpack_from(view, pos)
        pos += 4
        if pos + n > len(view):
            raise ProtocolError("a payload longer than its frame")
        payloads.append(bytes(view[pos : pos + n]))
        pos += n
    return payloads


def read_frame(read: Callable[[int], bytes], cap: int = MAX_FRAME_BYTES) -> bytes | None:
    """Read one length-prefixed frame with ``read(n)`` (which returns fewer bytes only at the
    end of the stream); None at a clean end of stream.

    Raises:
        ProtocolError: a length over ``cap``, or the stream ends inside a frame.
    """
    prefix = read(4)
    if not prefix:
        return None
    if len(prefix) < 4:
        raise ProtocolError("the stream ended inside a frame's length")
    (n,) = _U32.unpack(prefix)
    if n > cap:
        raise ProtocolError(f"a frame of {n} bytes (at most {cap})")
    body = read(n)
    if len(body) < n:
        raise ProtocolError("the stream ended inside a frame")
    return body


def framed(frame: bytes) -> bytes:
    """The frame with its ``u32`` length in front, for a stream."""
    return _U32.pack(len(frame)) + frame


@dataclass(frozen=True, slots=True)
class Start:
    """What a ``start`` frame carries: a run's options and its prepared program, with the
    host table reduced to each function's name and JS mode (by dispatch id)."""

    opts: RunOptions
    program: Program
    functions: list[tuple[str, int]]  # (name, FN_* mode) by dispatch id
    report: bool  # whether the caller has a report callback
    resumed: tuple[bytes, bytes] | None = None  # a resumed run's sealed continuation, answers


def start_frame(
    opts: RunOptions, program: Program, resumed: tuple[bytes, bytes] | None = None
) -> bytes:
    """The ``start`` frame of a run (host functions go by name and mode only); ``resumed``:
    a resumed run's continuation (sealed for transit) and its answers message."""
    limits = [getattr(opts.output_limits, name) for name in _LIMIT_FIELDS]
    fields = {
        "source": program.source,
        "fn": opts.fn,
        "kind": opts.kind,
        "language": opts.language,
        "filename": opts.filename,
        "modules": dict(program.modules),
        "user_sources": dict(program.user_sources),
        "host_modules": dict(program.host_modules),
        "functions": [[f.name, f.js_mode] for f in program.functions],
        "memory": opts.memory_limit_bytes,
        "timeout": opts.timeout,
        "timeout_includes_host_calls": opts.timeout_includes_host_calls,
        "fuel": opts.fuel,
        "dynamic_code": opts.dynamic_code,
        "deterministic": opts.deterministic,
        "seed": opts.seed,
        "limits": limits,
        "report": opts.report is not None,
        "resume": resumed is not None,
    }
    # the globals message and the arguments are value messages of their own: payloads, so
    # the head stays plain JSON
    payloads: list[bytes | _values.Message] = [program.globals_message]
    if resumed is not None:
        payloads.extend(resumed)  # a resumed run has no arguments: its entry was called
    elif opts.args_message is not None:
        payloads.append(opts.args_message)  # encoded once, by check_options
    return pack(START, [fields], payloads)


_RESULT_HEAD: Final = b'["result",'
_PLAIN_HEAD_AT: Final = 4 + _MSG_HEAD.size  # where a plain head's JSON starts in a frame


def looks_like_result(frame: bytes) -> bool:
    """Whether a worker's frame says it is a ``result`` (its run's last frame), from its
    first bytes and without decoding it: the pool hands the worker on at once. A frame that
    only looks like one still fails its run's full check."""
    return frame.startswith(b"\0", 4) and frame.startswith(_RESULT_HEAD, _PLAIN_HEAD_AT)


def stop_frame(run: int, reason: str) -> bytes:
    """A control-pipe ``terminate`` frame for the worker's ``run``-th run (counting from 1 the
    ``start`` frames on its main pipe), with its length in front; the reason is cut to
    ``MAX_REASON_CHARS`` (the caller keeps the whole one)."""
    return framed(pack(TERMINATE, (run, reason[:MAX_REASON_CHARS])))


def stop_from(frame: bytes) -> tuple[int, str]:
    """Read a control-pipe frame: the run it stops and the reason.

    Raises:
        ProtocolError: not a control-pipe ``terminate``.
    """
    kind, fields, payloads = unpack(frame, head_cap=MAX_CONTROL_FRAME_BYTES)
    if kind != TERMINATE or len(fields) != 2 or payloads:
        raise ProtocolError("not a control frame")
    run, reason = fields
    if type(run) is not int or run < 1 or not isinstance(reason, str):
        raise ProtocolError("not a control frame")
    return run, reason


_StartHead = tuple[dict[str, Any], list[tuple[str, int]], OutputLimits]


class StartHeads:
    """The read heads of recent ``start`` frames, by their bytes (a worker's, one per process
    or actor): a program run again with new arguments or globals has the same head, which is
    then not decoded and read again. At most ``MAX_ENTRIES`` heads of ``MAX_HEAD`` bytes each;
    what it holds is never changed by a run (the options and program only read it)."""

    MAX_ENTRIES: Final = 32
    MAX_HEAD: Final = 16 * 1024

    def __init__(self) -> None:
        self._heads: dict[bytes, _StartHead] = {}

    def get(self, head: bytes) -> _StartHead | None:
        return self._heads.get(head)

    def put(self, head: bytes, read: _StartHead) -> None:
        if len(self._heads) >= self.MAX_ENTRIES:
            self._heads.clear()  # a new working set: the next runs fill it again
        self._heads[head] = read


def _start_head(frame: bytes, heads: StartHeads | None) -> tuple[_StartHead, list[bytes]]:
    """A ``start`` frame's read head (from ``heads`` when it holds it) and its payloads."""
    view = memoryview(frame)
    key: bytes | None = None
    if heads is not None and len(view) >= 4:
        (head_len,) = _U32.unpack_from(view, 0)
        if head_len <= heads.MAX_HEAD and 4 + head_len <= len(view):
            key = bytes(view[4 : 4 + head_len])
            known = heads.get(key)
            if known is not None:
                return known, _payloads(view, 4 + head_len)
    kind, fields, payloads = unpack(frame, head_cap=MAX_FRAME_BYTES)
    if kind != START or len(fields) != 1 or not isinstance(fields[0], dict):
        raise ProtocolError("not a start frame")
    f = fields[0]
    functions = [(str(name), int(mode)) for name, mode in f["functions"]]
    limits = OutputLimits(**dict(zip(_LIMIT_FIELDS, f["limits"], strict=True)))
    read = (f, functions, limits)
    if heads is not None and key is not None:
        heads.put(key, read)
    return read, payloads


def start_from(
    frame: bytes,
    *,
    proxy: Callable[[int, str, int], HostFunction] | None = None,
    host: HostTable | None = None,
    report: Callable[[Any], None] | None = None,
    heads: StartHeads | None = None,
) -> Start:
    """Read a ``start`` frame (worker side: the caller is trusted, the checks are sanity).

    Args:
        frame: the frame.
        proxy: builds the worker's stand-in for each host function from its dispatch id,
            name and JS mode; without it the program has no functions.
        host: the run's host table when it has functions.
        report: the run's report callback.
        heads: the worker's recent heads, to read a repeated one only once.
    """
    (f, functions, limits), payloads = _start_head(frame, heads)
    resumed = f.get("resume") is True
    if len(payloads) not in ((3,) if resumed else (1, 2)):
        raise ProtocolError("not a start frame")
    # the arguments go to the guest as they came, never decoded here: framing and cap checked
    args = payloads[1] if len(payloads) == 2 else None
    if args is not None:
        try:
            _values.check_message(args)
        except TransferError as exc:
            raise ProtocolError(f"start arguments that are not a value message ({exc})") from None
    opts = RunOptions(
        source=f["source"],
        fn=f["fn"],
        args_message=None if args is None else _values.Message((args,)),
        kind=f["kind"],
        language=f["language"],
        filename=f["filename"],
        modules=f["modules"],
        host=host if functions and proxy is not None else None,
        report=report,
        memory_limit_bytes=f["memory"],
        timeout=f["timeout"],
        timeout_includes_host_calls=f["timeout_includes_host_calls"],
        fuel=f["fuel"],
        dynamic_code=f["dynamic_code"],
        deterministic=f["deterministic"],
        seed=f["seed"],
        output_limits=limits,
    )
    program = Program(
        source=f["source"],
        modules=f["modules"],
        user_sources=f["user_sources"],
        host_modules=f["host_modules"],
        globals_message=payloads[0],
        functions=()
        if proxy is None
        else tuple(proxy(fid, name, mode) for fid, (name, mode) in enumerate(functions)),
    )
    return Start(
        opts,
        program,
        functions,
        bool(f["report"]),
        (payloads[1], payloads[2]) if resumed else None,
    )


def result_frame(
    result: CodeResult,
    tail_reports: list[Any],
    shown: Callable[[Any], bool],
    sealed: bytes | None = None,
) -> bytes:
    """The ``result`` frame of a finished run (worker side).

    ``tail_reports`` are the reports not streamed yet; ``shown(exc)`` tells the host errors
    that are the caller's own (a proxied call's failure) and stay out of the frame; a paused
    run's continuation, ``sealed`` for transit, is its last payload.
    """
    err = result.error
    error = None
    payloads = [
        _encode_or(result.result, "result"),
        _encode_or(tail_reports, "reports") if tail_reports else _EMPTY_LIST,
        _logs_message(result.logs),
    ]
    if err is not None:
        error = [err.name, err.message, err.stack, err.line, err.column, err.filename]
        payloads.append(_encode_or(err.value, "the thrown value"))
    elif sealed is not None:
        payloads.append(sealed)
    m = result.metrics
    metrics = {name: getattr(m, name) for name in _INT_METRICS}
    metrics.update(wall_ms=m.wall_ms, guest_cpu_ms=m.guest_cpu_ms, fuel_used=m.fuel_used)
    errors = [_text_of(e) for e in result.host_errors if not shown(e)]
    head = [result.status, result.reason, error, metrics, result.duration_ms, errors]
    return pack(RESULT, head, payloads, plain_shape=True)


def _logs_message(logs: list[LogEntry]) -> bytes:
    if not logs:
        return _EMPTY_LIST
    try:
        return _values.encode([[e.level, e.args, e.timestamp] for e in logs], path="logs")
    except TransferError:
        note = [["warn", ["[quickjail] the logs could not cross to the caller"], 0.0]]
        return _values.encode(note)


def _text_of(exc: BaseException) -> str:
    """``"Class: message"``, cut to ``MAX_HOST_ERROR_CHARS``; never raises."""
    try:
        text = f"{type(exc).__name__}: {exc}"
    except Exception:
        text = f"{type(exc).__name__}: <unprintable>"
    return text[:MAX_HOST_ERROR_CHARS]


def _encode_or(value: Any, what: str) -> bytes:
    try:
        return _values.encode(value, path=what)
    except TransferError as exc:
        return _values.encode(f"[quickjail] {what} could not cross to the caller: {exc}")


@dataclass(frozen=True, slots=True)
class RemoteResult:
    """A checked ``result`` frame: the worker's outcome, before the caller's own parts."""

    status: str
    reason: str | None
    result: Any
    error: ErrorInfo | None
    logs: list[LogEntry]
    tail_reports: list[Any]
    metrics: dict[str, Any]  # RunMetrics' fields, checked
    duration_ms: float
    host_errors: list[str]
    sealed: bytes | None = None  # a paused run's continuation (hostile: _durable checks it)


def re_encoded(cap: int) -> int:
    """The most a worker may send against an output cap of ``cap`` bytes (or the caller may
    decode against a budget of ``cap``): the worker's run held the guest's own bytes to the
    cap, and the values cross encoded again by the host's encoder, which writes a few types
    a little longer (a Date about 10 %); a quarter and ``REENCODE_BYTES`` of room for that."""
    return cap + cap // 4 + REENCODE_BYTES


def result_from(
    fields: list[Any],
    payloads: list[bytes],
    budget: _values.DecodeBudget,
    limits: OutputLimits | None = None,
) -> RemoteResult:
    """Check and read a ``result`` frame's fields (caller side; the worker is hostile); with
    ``limits``, the result, the thrown value and the logs are held to the run's output limits
    (:func:`re_encoded`) before anything is decoded.

    Raises:
        ProtocolError: a field of the wrong type or out of its bounds.
    """
    if len(fields) != 6 or len(payloads) not in (3, 4):
        raise ProtocolError("a result frame of the wrong shape")
    status, reason, error, metrics, duration, errors = fields
    if status not in _STATUSES:
        raise ProtocolError("a result with an unknown status")
    if reason is not None and (not isinstance(reason, str) or len(reason) > MAX_REASON_CHARS):
        raise ProtocolError("a result with a bad reason")
    sealed = None
    if status == "paused":
        if error is not None or len(payloads) != 4:
            raise ProtocolError("a paused result without its continuation")
        sealed = payloads.pop()
    if limits is not None:
        _check_sizes(payloads, limits)
    try:
        value = _values.decode(payloads[0], budget=budget)
        tail = [] if payloads[1] == _EMPTY_LIST else _values.decode(payloads[1], budget=budget)
        logs_raw = (
            []
            if payloads[2] == _EMPTY_LIST
            else _values.decode(payloads[2], budget=budget, lenient=True)
        )
        thrown = _values.decode(payloads[3], budget=budget) if len(payloads) == 4 else None
    except TransferError as exc:
        raise ProtocolError(f"a result payload that does not decode ({exc})") from None
    if not isinstance(tail, list):
        raise ProtocolError("a result whose reports are not a list")
    return RemoteResult(
        status=status,
        reason=reason,
        result=value,
        error=_error_from(error, thrown, len(payloads) == 4),
        logs=_logs_from(logs_raw),
        tail_reports=tail,
        metrics=_metrics_from(metrics),
        duration_ms=_non_negative(duration),
        host_errors=_texts_from(errors),
        sealed=sealed,
    )


def _check_sizes(payloads: list[bytes], limits: OutputLimits) -> None:
    """A result's value or thrown value over ``max_result_bytes``, or its logs over
    ``max_log_bytes`` (with each entry's own bytes), break the protocol: the worker's run
    would have refused them."""
    result_cap = re_encoded(limits.max_result_bytes)
    if len(payloads[0]) > result_cap or (len(payloads) == 4 and len(payloads[3]) > result_cap):
        raise ProtocolError("a result larger than max_result_bytes")
    entries = limits.max_logs + limits.max_rejections + 1  # + the "logs dropped" note
    if len(payloads[2]) > re_encoded(limits.max_log_bytes) + entries * _LOG_ENTRY_BYTES:
        raise ProtocolError("logs larger than max_log_bytes")


def _error_from(error: Any, thrown: Any, has_value: bool) -> ErrorInfo | None:
    if error is None:
        if has_value:
            raise ProtocolError("a thrown value without an error")
        return None
    if not isinstance(error, list) or len(error) != 6 or not has_value:
        raise ProtocolError("a result with a malformed error")
    name, message, stack, line, column, filename = error
    caps = ((name, MAX_ERROR_NAME_CHARS), (message, MAX_ERROR_MESSAGE_CHARS))
    for text, cap in (*caps, (stack, MAX_ERROR_STACK_CHARS)):
        if not isinstance(text, str) or len(text) > cap + 64:  # + the truncation note
            raise ProtocolError("a result with a malformed error text")
    for pos in (line, column):
        if pos is not None and not (type(pos) is int and 0 <= pos <= MAX_CALL_ID):
            raise ProtocolError("a result with a malformed error position")
    if filename is not None and not isinstance(filename, str):
        raise ProtocolError("a result with a malformed error file name")
    return ErrorInfo(name, message, stack, line, column, filename, thrown)


def _logs_from(raw: Any) -> list[LogEntry]:
    if not isinstance(raw, list):
        raise ProtocolError("a result whose logs are not a list")
    logs: list[LogEntry] = []
    for entry in raw:
        if not (isinstance(entry, list) and len(entry) == 3 and entry[0] in LOG_LEVELS):
            raise ProtocolError("a result with a malformed log entry")
        level, args, when = entry
        if not isinstance(args, list):
            raise ProtocolError("a result with a malformed log entry")
        logs.append(LogEntry(level, args, _non_negative(when)))
    return logs


def _metrics_from(raw: Any) -> dict[str, Any]:
    """The checked fields of a result's :class:`RunMetrics` (the caller adjusts a few and
    builds it once)."""
    if not isinstance(raw, dict) or raw.keys() != _METRIC_KEYS:
        raise ProtocolError("a result with malformed metrics")
    for name in _INT_METRICS:
        value = raw[name]
        if type(value) is not int or not 0 <= value <= MAX_CALL_ID:
            raise ProtocolError("a result with malformed metrics")
    fuel = raw["fuel_used"]
    if fuel is not None and (type(fuel) is not int or not 0 <= fuel < 2**64):
        raise ProtocolError("a result with malformed metrics")
    out = dict(raw)
    out["wall_ms"] = _non_negative(raw["wall_ms"])
    out["guest_cpu_ms"] = _non_negative(raw["guest_cpu_ms"])
    return out


def _non_negative(value: Any) -> float:
    if type(value) not in (int, float) or not (math.isfinite(value) and value >= 0):
        raise ProtocolError("a result with a malformed number")
    return float(value)


def _texts_from(raw: Any) -> list[str]:
    if not isinstance(raw, list) or len(raw) > 100:
        raise ProtocolError("a result with malformed host errors")
    for text in raw:
        if not isinstance(text, str) or len(text) > MAX_HOST_ERROR_CHARS:
            raise ProtocolError("a result with malformed host errors")
    return list(raw)
