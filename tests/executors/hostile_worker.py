"""A compromised pool worker for the tests: it speaks the frame protocol, then misbehaves as
the run's source says (``"behaviour:<name>"``); any other source gets an honest result.

Run as ``python hostile_worker.py`` in place of ``python -m quickjail.executors._worker``.
"""

from __future__ import annotations

import ctypes
import os
import struct
import sys
import time

from quickjail.executors import _wire
from quickjail.sandbox import CodeResult, LogEntry, warm_up

_U32 = struct.Struct("<I")


def main() -> None:
    out = sys.stdout.buffer
    read = sys.stdin.buffer.read

    def send(frame: bytes) -> None:
        out.write(_wire.framed(frame))
        out.flush()

    def raw(data: bytes) -> None:
        out.write(data)
        out.flush()

    if os.environ.get("HOSTILE_NEVER_READY"):
        sys.exit(7)
    send(_wire.pack(_wire.READY))
    while True:
        frame = _wire.read_frame(read, cap=2**32 - 1)
        if frame is None:
            return
        try:
            start = _wire.start_from(frame)
        except _wire.ProtocolError:
            continue  # a late reply or terminate
        behaviour = start.program.source.removeprefix("behaviour:")
        report = _wire.pack(_wire.REPORT, (), (_values_message(1),))
        honest = _wire.result_frame(CodeResult(status="success", result=1), [], lambda e: False)
        if behaviour == "oversize":
            raw(_U32.pack(_wire.MAX_FRAME_BYTES + 1))
        elif behaviour == "truncated":
            raw(_U32.pack(1000) + b"\0" * 10)
            sys.exit(0)
        elif behaviour == "garbage":
            send(b"\xff" * 64)
        elif behaviour == "unknown-kind":
            send(_wire.pack("hello", (1, 2)))
        elif behaviour == "reply-from-worker":
            send(_wire.pack(_wire.REPLY, (1, True), (_values_message(1),)))
        elif behaviour == "unknown-function":
            send(_wire.pack(_wire.CALL, (1, 99), (_values_message([]),)))
        elif behaviour == "reused-call-id":
            send(_wire.pack(_wire.CALL, (1, 0), (_values_message([]),)))
            send(_wire.pack(_wire.CALL, (1, 0), (_values_message([]),)))
        elif behaviour == "two-sync-calls":
            send(_wire.pack(_wire.CALL, (1, 1), (_values_message([]),)))
            send(_wire.pack(_wire.CALL, (2, 1), (_values_message([]),)))
        elif behaviour == "log-flood":
            logs = [LogEntry("log", ["x"], 0.0)] * (start.opts.output_limits.max_logs + 2)
            send(_wire.result_frame(CodeResult(status="success", logs=logs), [], lambda e: False))
        elif behaviour == "report-flood":
            for _ in range(start.opts.output_limits.max_reports + 1):
                send(report)
        elif behaviour == "report-bytes-flood":  # within max_reports, past max_report_bytes
            big = _wire.pack(_wire.REPORT, (), (_values_message("x" * 8 * 2**20),))
            for _ in range(start.opts.output_limits.max_reports):
                send(big)
        elif behaviour == "result-bytes-flood":
            text = "x" * 2 * start.opts.output_limits.max_result_bytes
            send(_wire.result_frame(CodeResult(status="success", result=text), [], lambda e: 0))
        elif behaviour == "log-bytes-flood":
            line = LogEntry("log", ["x" * start.opts.output_limits.max_log_bytes], 0.0)
            logs = [line] * start.opts.output_limits.max_logs
            send(_wire.result_frame(CodeResult(status="success", logs=logs), [], lambda e: 0))
        elif behaviour == "decode-bomb":
            bomb = b"[" + b"[]," * (4 * 2**20) + b"[]]"
            message = b"\0" + _U32.pack(len(bomb)) + bomb + _U32.pack(0)
            send(_wire.pack(_wire.REPORT, (), (message,)))
        elif behaviour == "bad-status":
            frame = honest.replace(b'"success"', b'"winning"')
            send(frame)
        elif behaviour == "segfault":
            warm_up()  # wasmtime's own SIGSEGV handler is in place, as in a real worker
            send(report)
            ctypes.string_at(0)
        elif behaviour == "exit":
            send(report)
            os._exit(3)
        elif behaviour == "hang":
            send(report)
            time.sleep(3600)  # reads nothing more: neither a terminate nor the end of stdin
        elif behaviour == "call-then-bad-status":
            send(_wire.pack(_wire.CALL, (1, 0), (_values_message([]),)))
            while _wire.unpack(_wire.read_frame(read) or b"")[0] != _wire.REPLY:
                pass  # the caller's reply, once its host function returns
            send(honest.replace(b'"success"', b'"winning"'))
        elif behaviour.startswith("paused-"):
            send(_paused(behaviour, start.opts.memory_limit_bytes))
        elif behaviour == "frame-after-result":
            send(honest)
            time.sleep(0.05)
            send(report)
        else:
            send(honest)


def _paused(behaviour: str, memory_limit_bytes: int) -> bytes:
    """A ``paused`` result whose continuation is forged (paused calls the caller never
    paused), larger than the run's memory limit allows, or not a continuation at all."""
    from quickjail.executors import _durable
    from quickjail.sandbox import _engine
    from quickjail.sandbox._continuation import Continuation, max_sealed_size

    if behaviour == "paused-forged":
        state = {"functions": ["h.wait"], "paused": [[1, 0, "h.wait", ["rm -rf /"], None]]}
        cont = Continuation(_engine._load_guest_info().build_id, 65536, [], state)
        sealed = _durable.seal_for_transit(cont)
    elif behaviour == "paused-oversized":
        sealed = b"QJCONT\r\n" + bytes(max_sealed_size(memory_limit_bytes))
    else:
        sealed = b"\xff" * 1000
    paused = CodeResult(status="paused")
    return _wire.result_frame(paused, [], lambda e: False, sealed)


def _values_message(value: object) -> bytes:
    from quickjail.sandbox import _values

    return _values.encode(value)


if __name__ == "__main__":
    main()
