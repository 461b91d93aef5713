"""A process-pool worker: ``python -m quickjail.executors._worker``.

Speaks length-prefixed frames (:mod:`quickjail.executors._wire`) on its stdin and stdout:
loads the engine and the compiled guest once, says ``ready``, then serves one run at a time
(:class:`~quickjail.executors._serve.ServedRun` on a runner thread, while this thread passes the
caller's ``reply`` and ``terminate`` frames to it). Anything else Python or a library would
write to stdout goes to stderr, so the channel carries frames only. Exits at the end of
stdin, or on a frame it does not understand.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
from typing import BinaryIO

from quickjail.executors import _wire
from quickjail.executors._serve import ServedRun
from quickjail.sandbox import warm_up

__all__ = ["main"]


def _channel() -> tuple[BinaryIO, BinaryIO]:
    """The frame channel (the original stdin and stdout); fd 1 becomes stderr."""
    out = os.fdopen(os.dup(1), "wb")  # buffered: a write is never partial
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return sys.stdin.buffer, out


def main() -> int:
    """Serve runs until stdin ends (exit code 0, at once, even mid-run); 2 after a bad
    frame."""
    source, sink = _channel()
    lock = threading.Lock()

    def send(frame: bytes) -> None:
        with lock:
            sink.write(len(frame).to_bytes(4, "little"))  # the frame itself is not copied
            sink.write(frame)
            sink.flush()

    warm_up()
    runs: queue.SimpleQueue[ServedRun] = queue.SimpleQueue()
    threading.Thread(target=_runner, args=(runs,), name="quickjail-served-run", daemon=True).start()
    send(_wire.pack(_wire.READY))
    served: ServedRun | None = None
    while True:
        frame = _wire.read_frame(source.read, cap=2**32 - 1)
        if frame is None:
            sink.close()
            os._exit(0)  # the caller is gone: a run still going ends with this process
        if served is not None and served.ended.is_set():
            served = None  # it is sending the result: the caller may start the next run
        try:
            if served is not None:
                served.deliver(frame)
                continue
            served = ServedRun(frame, send)
        except _wire.ProtocolError:
            if _wire.unpack(frame, head_cap=len(frame))[0] in (_wire.REPLY, _wire.TERMINATE):
                continue  # a late frame of a run that ended
            return 2
        if not served.start():  # a run with async host functions needs a driving thread
            runs.put(served)


def _runner(runs: queue.SimpleQueue[ServedRun]) -> None:
    """Run each run in turn (one thread for the worker's life, not one per run)."""
    while True:
        served = runs.get()
        try:
            served.run()
        except BaseException:  # run() turns failures into outcomes; past that, die loudly
            os._exit(3)  # the caller sees its worker lost, rather than waiting for a result
        del served  # an idle worker keeps no run alive


if __name__ == "__main__":
    sys.exit(main())
