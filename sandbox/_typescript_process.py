"""Type stripping in helper processes, for sources too large to parse on the caller's thread.

tree-sitter holds the GIL from the start of a parse to its end, and on adversarial text most of
the parse is one stretch at the end of the input where no progress callback runs, so neither a
callback nor a thread can bound it. A helper is a Python process running :func:`serve`: it reads
requests on its stdin, strips them with the in-process stripper and writes the answers to its
stdout. The caller's thread sends the source and waits on the pipes with ``poll`` (no GIL held)
until the answer, the deadline or :data:`HELPER_TIME_LIMIT`; then the helper is killed
(``SIGKILL``) and reaped, and the next large source starts a fresh one. Up to
:data:`MAX_IDLE_HELPERS` helpers are kept for reuse; each ends when its stdin closes, so with
this process. Where helpers cannot run (no ``sys.executable``, or a helper that ends before
its first byte, ``R``, which it writes once its imports are done), large sources are stripped
on the caller's thread, as before, and that is logged once.

Frames, both ways: a 4-byte big-endian length, then the payload. A request is the file name's
UTF-8 length (4 bytes), the file name and the source (UTF-8); an answer is ``J`` and the
JavaScript (UTF-8), or ``E`` and a JSON object with the :class:`TypeScriptError`'s message,
line and column. The answer is checked as hostile data: its size is bounded before it is read
whole, and the JavaScript must keep the source's lines (its length in code points, or as many
line breaks where ``enum`` or parameter properties generated code).
"""

from __future__ import annotations

import atexit
import json
import math
import os
import select
import subprocess
import sys
import threading
import time
from typing import Any, BinaryIO, Final

from quickjail.sandbox._log import LOGGER
from quickjail.sandbox._typescript_error import StripTimeout, TypeScriptError, max_output_bytes

__all__ = ["HELPER_TIME_LIMIT", "MAX_IDLE_HELPERS", "helper_pids", "serve", "strip"]

HELPER_TIME_LIMIT: Final = 60.0
"""Seconds a strip may take in a helper when the run has no deadline (the worst source takes
about four); past it the helper is killed and the strip fails as a TypeScriptError."""
MAX_IDLE_HELPERS: Final = 2
"""Helper processes kept waiting for the next large source; more concurrent strips start more,
which end after their strip."""

_MAX_ERROR_ANSWER: Final = 64 * 2**10
_CHUNK: Final = 2**16
_READY: Final = b"R"
_BOOT: Final = (
    "import json, sys\n"
    "sys.path[:0] = [p for p in json.loads(sys.argv[1]) if p not in sys.path]\n"
    "from quickjail.sandbox._typescript_process import serve\n"
    "serve()\n"
)


class _HelperFailed(Exception):
    """The helper ended, or answered something that is not an answer."""


class _HelperDidNotStart(_HelperFailed):
    """The helper ended before it was ready: helpers cannot run here (not the source's doing,
    since a helper says it is ready before it reads a request)."""


class _Helper:
    """One helper process and its pipes; used by one thread at a time."""

    def __init__(self) -> None:
        paths = [os.path.abspath(p) if p else os.getcwd() for p in sys.path if isinstance(p, str)]
        self.process = subprocess.Popen(
            [sys.executable, "-c", _BOOT, json.dumps(paths)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            close_fds=True,
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.to_helper = self.process.stdin.fileno()
        self.from_helper = self.process.stdout.fileno()
        os.set_blocking(self.to_helper, False)
        os.set_blocking(self.from_helper, False)
        self.ready = False  # the helper's first byte, `R`, says its imports are done

    def exchange(self, request: bytes, deadline: float, limit: int) -> bytes:
        """Sends one request and returns the answer's payload (at most `limit` bytes).

        Raises:
            StripTimeout: `deadline` passed first (the helper is then unusable).
            _HelperFailed: the helper ended or broke the frame format.
        """
        poller = select.poll()
        poller.register(self.from_helper, select.POLLIN)
        poller.register(self.to_helper, select.POLLOUT)
        frame = memoryview(len(request).to_bytes(4, "big") + request)
        sent = 0
        received = bytearray()
        size = -1
        while True:
            wait = deadline - time.monotonic()
            if wait <= 0:
                raise StripTimeout
            for fd, _events in poller.poll(math.ceil(wait * 1000)):
                if fd == self.to_helper:
                    try:
                        sent += os.write(fd, frame[sent : sent + _CHUNK])
                    except BlockingIOError:
                        continue
                    except OSError as exc:  # it ended before it read the whole request
                        raise self._ended(f"writing to it failed ({exc})") from None
                    if sent == len(frame):
                        poller.unregister(fd)
                    continue
                try:
                    chunk = os.read(fd, _CHUNK)
                except BlockingIOError:
                    continue
                if not chunk:
                    raise self._ended(f"it ended (exit status {self.process.poll()})")
                if not self.ready:
                    if chunk[:1] != _READY:
                        raise _HelperFailed("it did not say it was ready")
                    self.ready = True
                    chunk = chunk[1:]
                received += chunk
                if size < 0 and len(received) >= 4:
                    size = int.from_bytes(received[:4], "big")
                    if size > limit:
                        raise _HelperFailed(f"it announced an answer of {size} bytes")
                if size >= 0 and len(received) >= 4 + size:
                    if len(received) > 4 + size or sent < len(frame):
                        raise _HelperFailed("it answered out of turn")
                    return bytes(received[4:])

    def _ended(self, what: str) -> _HelperFailed:
        """The failure of a helper found ended: it did not start unless it said it was ready
        (its `R` may still wait in the pipe)."""
        if not self.ready:
            try:
                self.ready = os.read(self.from_helper, 1) == _READY
            except OSError:
                pass
        return _HelperFailed(what) if self.ready else _HelperDidNotStart(what)

    def kill(self) -> None:
        """Kills and reaps the helper (idempotent)."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()


_lock = threading.Lock()
_idle: list[_Helper] = []
_cannot_start = False


def _forget_inherited_helpers() -> None:
    """In a forked child the helpers' pipes are shared with the parent (never use them), and
    the lock may have been held by a thread that does not exist there."""
    global _idle, _lock
    _idle = []
    _lock = threading.Lock()


def _end_idle_helpers() -> None:
    """At exit: the idle helpers end with this process anyway (their stdin closes); ending
    them here reaps them too."""
    with _lock:
        helpers = list(_idle)
        _idle.clear()
    for helper in helpers:
        helper.kill()


os.register_at_fork(after_in_child=_forget_inherited_helpers)
atexit.register(_end_idle_helpers)


def helper_pids() -> list[int]:
    """Process ids of the idle helpers (tests check that a killed helper is not among them)."""
    with _lock:
        return [helper.process.pid for helper in _idle]


def strip(source: str, data: bytes, filename: str, deadline: float | None) -> str:
    """Strips `source` (`data`: its UTF-8) in a helper; see :func:`._typescript.strip_types`.

    An idle helper that turns out to have ended (killed from outside) is replaced once; a new
    helper that fails fails the strip.

    Raises:
        TypeScriptError: what the stripper refused, or the helper failed or ran out of
            :data:`HELPER_TIME_LIMIT`.
        StripTimeout: `deadline` passed first; the helper was killed.
    """
    name = filename.encode("utf-8", "surrogatepass")
    request = len(name).to_bytes(4, "big") + name + data
    limit = time.monotonic() + HELPER_TIME_LIMIT
    stop = limit if deadline is None else min(deadline, limit)
    answer_limit = max(max_output_bytes(len(data)), _MAX_ERROR_ANSWER) + 1
    while True:
        helper, reused, why = _take()
        if helper is None:
            return _strip_here(source, filename, why)
        try:
            answer = helper.exchange(request, stop, answer_limit)
            javascript = _read_answer(answer, source, filename)
        except TypeScriptError:  # the stripper's refusal: the helper is fine
            _give_back(helper)
            raise
        except StripTimeout:
            helper.kill()
            if deadline is not None and deadline <= limit:
                raise
            message = f"type stripping did not end within {HELPER_TIME_LIMIT:g} s, its time limit"
            raise TypeScriptError(message, line=1, column=1, filename=filename) from None
        except _HelperDidNotStart as exc:
            helper.kill()
            return _strip_here(source, filename, f"{sys.executable} -c ...: {exc}, not ready")
        except _HelperFailed as exc:
            helper.kill()
            if reused:
                continue
            message = f"the type-stripping helper process failed: {exc}"
            raise TypeScriptError(message, line=1, column=1, filename=filename) from None
        except BaseException:
            helper.kill()
            raise
        _give_back(helper)
        return javascript


def _strip_here(source: str, filename: str, why: str) -> str:
    """Strips on the caller's thread, where no helper can be started (logged once; no helper
    is tried again)."""
    global _cannot_start
    if not _cannot_start:
        _cannot_start = True
        LOGGER.warning(
            "no type-stripping helper process can be started (%s): large TypeScript sources "
            "are stripped on the caller's thread, holding the GIL and past any run's deadline",
            why,
        )
    from quickjail.sandbox._typescript import _strip

    return _strip(source, filename)[0]


def _take() -> tuple[_Helper | None, bool, str]:
    """An idle helper still alive (and True), or a new one (and False); None if none can be
    started (and why)."""
    while True:
        with _lock:
            helper = _idle.pop() if _idle else None
        if helper is None:
            break
        if helper.process.poll() is None:
            return helper, True, ""
        helper.kill()  # it ended while idle (killed from outside): reap it
    if _cannot_start:
        return None, False, "logged before"
    if not sys.executable:
        return None, False, "sys.executable is empty"
    try:
        return _Helper(), False, ""
    except OSError as exc:
        return None, False, f"{sys.executable}: {exc}"


def _give_back(helper: _Helper) -> None:
    with _lock:
        if len(_idle) < MAX_IDLE_HELPERS:
            _idle.append(helper)
            return
    helper.kill()


def _same_lines(javascript: str, source: str) -> bool:
    """Tells whether the JavaScript keeps the source's lines: of the same length in code points
    (types erased) or, with generated code, with as many line breaks of each kind."""
    if len(javascript) == len(source):
        return True
    return all(
        javascript.count(brk) == source.count(brk) for brk in ("\n", "\r", "\u2028", "\u2029")
    )


def _read_answer(answer: bytes, source: str, filename: str) -> str:
    """The JavaScript of a helper's answer; raises its TypeScriptError, or _HelperFailed for an
    answer that is not one."""
    kind, payload = answer[:1], answer[1:]
    if kind == b"J":
        try:
            javascript = payload.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            javascript = None
        if javascript is not None and _same_lines(javascript, source):
            return source if javascript == source else javascript
    elif kind == b"E" and len(payload) <= _MAX_ERROR_ANSWER:
        error = _error_fields(payload)
        if error is not None:
            message, line, column = error
            raise TypeScriptError(message, line=line, column=column, filename=filename)
    raise _HelperFailed("it gave an answer that is not one")


def _error_fields(payload: bytes) -> tuple[str, int, int] | None:
    try:
        fields: Any = json.loads(payload)
    except ValueError:
        return None
    if not isinstance(fields, dict):
        return None
    message, line, column = fields.get("message"), fields.get("line"), fields.get("column")
    if not isinstance(message, str) or type(line) is not int or type(column) is not int:
        return None
    if line < 1 or column < 1:
        return None
    return message, line, column


def serve() -> None:
    """A helper's loop: strips each request from stdin and answers on stdout until stdin ends."""
    from quickjail.sandbox._typescript import _strip  # the grammar loads once, before requests

    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    stdout.write(_READY)
    stdout.flush()
    while True:
        header = _read_exactly(stdin, 4)
        if header is None:
            return
        request = _read_exactly(stdin, int.from_bytes(header, "big"))
        if request is None:
            return
        name_size = int.from_bytes(request[:4], "big")
        filename = request[4 : 4 + name_size].decode("utf-8", "surrogatepass")
        source = request[4 + name_size :].decode("utf-8", "surrogatepass")
        try:
            answer = b"J" + _strip(source, filename)[0].encode("utf-8", "surrogatepass")
        except TypeScriptError as exc:
            fields = {"message": exc.message, "line": exc.line, "column": exc.column}
            answer = b"E" + json.dumps(fields).encode()
        stdout.write(len(answer).to_bytes(4, "big") + answer)
        stdout.flush()


def _read_exactly(stream: BinaryIO, size: int) -> bytes | None:
    """Reads `size` bytes, or returns None at the end of the stream."""
    data = bytearray()
    while len(data) < size:
        chunk = stream.read(size - len(data))
        if not chunk:
            return None
        data += chunk
    return bytes(data)
