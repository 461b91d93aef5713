"""A process-pool worker: ``python -m quickjail.executors._worker``.

Speaks length-prefixed frames (:mod:`quickjail.executors._wire`) on its stdin and stdout:
loads the engine and the compiled guest once, says ``ready``, then serves one run at a time.
A serving thread (with a guest-sized stack) reads the caller's frames; a run with no host
functions runs right there, as the caller sends it nothing until its result; any other run goes
to the engine's threads (or, with async host functions, to a runner thread) while the serving
thread passes it the caller's ``reply`` frames. Stops come on a control pipe of their own (its
fd in ``CONTROL_FD_ENV``), read by the main thread, so they reach a run that occupies the
serving thread. Anything else Python or a library would write to stdout goes to stderr, so the
channel carries frames only. Exits at the end of either pipe, or on a frame it does not
understand.
"""

from __future__ import annotations

import gc
import os
import queue
import sys
import threading
from collections.abc import Callable
from typing import BinaryIO

from quickjail.executors import _wire
from quickjail.executors._serve import ServedRun
from quickjail.sandbox import warm_up
from quickjail.sandbox._threads import start_thread

__all__ = ["main"]

_LATE = (_wire.REPLY, _wire.PAUSE, _wire.TERMINATE)  # frames a run may get after its end


def _channel() -> tuple[BinaryIO, BinaryIO]:
    """The frame channel (the original stdin and stdout); fd 1 becomes stderr."""
    out = os.fdopen(os.dup(1), "wb")  # buffered: a write is never partial
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return sys.stdin.buffer, out


class _Runs:
    """Which run is the worker's current one, by its number (the caller counts ``start``
    frames the same way), so a stop reaches the run it was meant for: a stop for a run not
    started yet waits for it, one for a run that ended is dropped."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._number = 0
        self._current: ServedRun | None = None
        self._early: tuple[int, str] | None = None

    def began(self, served: ServedRun) -> None:
        with self._lock:
            self._number += 1
            self._current = served
            early, self._early = self._early, None
        if early is not None and early[0] == self._number:
            served.stop(early[1])

    def stop(self, number: int, reason: str) -> None:
        with self._lock:
            if number > self._number:
                self._early = (number, reason)
                return
            served = self._current if number == self._number else None
        if served is not None:
            served.stop(reason)


def main() -> int:
    """Serve runs until stdin or the control pipe ends (exit code 0, at once, even mid-run);
    2 after a bad frame."""
    source, sink = _channel()
    lock = threading.Lock()

    def send(frame: bytes) -> None:
        with lock:
            sink.write(len(frame).to_bytes(4, "little"))  # the frame itself is not copied
            sink.write(frame)
            sink.flush()

    control = os.environ.pop(_wire.CONTROL_FD_ENV, None)
    warm_up()
    gc.freeze()  # what warming up loaded lives as long as the worker: collections skip it
    runs = _Runs()
    start_thread(lambda: os._exit(_serve(source, sink, send, runs)), "quickjail-serve")
    send(_wire.pack(_wire.READY))
    if control is None:  # started by hand: no stops come, the serving thread exits
        threading.Event().wait()
        return 0
    with os.fdopen(int(control), "rb") as pipe:
        while True:
            try:
                frame = _wire.read_frame(pipe.read, cap=_wire.MAX_CONTROL_FRAME_BYTES)
                if frame is None:
                    os._exit(0)  # the caller is gone
                runs.stop(*_wire.stop_from(frame))
            except _wire.ProtocolError:
                os._exit(2)


def _serve(source: BinaryIO, sink: BinaryIO, send: Callable[[bytes], None], runs: _Runs) -> int:
    """Read the caller's frames and start its runs; the worker's exit code once it ends."""
    queued: queue.SimpleQueue[ServedRun] = queue.SimpleQueue()
    heads = _wire.StartHeads()
    threading.Thread(
        target=_runner, args=(queued,), name="quickjail-served-run", daemon=True
    ).start()
    served: ServedRun | None = None
    while True:
        frame = _wire.read_frame(source.read, cap=2**32 - 1)
        if frame is None:
            sink.close()
            return 0  # the caller is gone: a run still going ends with this process
        if served is not None and served.ended:
            served = None  # it is sending the result: the caller may start the next run
        try:
            if served is not None:
                served.deliver(frame)
                continue
            served = ServedRun(frame, send, heads)
        except _wire.ProtocolError:
            if _wire.unpack(frame, head_cap=len(frame))[0] in (
                _wire.REPLY,
                _wire.PAUSE,
                _wire.TERMINATE,
            ):
                continue  # a late frame of a run that ended
            return 2
        runs.began(served)
        if served.alone:
            served.start(here=True)
            served = None  # nothing more comes for it here
        elif not served.start():  # a run with async host functions needs a driving thread
            queued.put(served)


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
