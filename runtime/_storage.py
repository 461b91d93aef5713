"""``state.storage``: parameterized SQL on a database private to one thread.

Isolation is by construction, not by rewriting SQL text: each thread's tables live in a SQLite
file of their own (``<runtime db>.storage/<sha256 of the thread id>.sqlite``), so the runtime's
tables and other threads' data are simply not in the connection. An authorizer callback keeps
it that way: it refuses ``ATTACH`` (which ``VACUUM INTO`` also needs), ``DETACH``, the ``temp``
schema, transactions and savepoints (each call is one atomic statement), triggers, virtual
tables, every ``PRAGMA`` outside a read-only allow-list and every SQL function outside an
allow-list (so no ``load_extension``). The host bounds the rest: statement size, value size,
LIKE pattern length, database size (``max_page_count``), VM instructions (progress handler),
the rows and bytes of a result, and wall time from outside: statements run in a child process
(:mod:`quickjail.runtime._storage_worker`) that the host kills when one has not answered by
``MAX_SECONDS`` + ``KILL_GRACE`` or its caller was cancelled, because no SQLite hook reaches
inside one C function call (a 109-character ``instr`` over ``zeroblob`` strings ran 23 s).
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import select
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Final

import anyio.to_thread

from .errors import RuntimeClosedError, StorageError

__all__ = ["SqlResult", "StoragePool", "ThreadStorage"]

#: Limits of ``state.storage.sql``.
MAX_SQL_CHARS: Final = 100_000
MAX_VALUE_BYTES: Final = 4 * 1024 * 1024
MAX_DATABASE_BYTES: Final = 64 * 1024 * 1024
MAX_INSTRUCTIONS: Final = 50_000_000
MAX_SECONDS: Final = 10.0
MAX_ROWS: Final = 10_000
MAX_RESULT_BYTES: Final = 8 * 1024 * 1024
MAX_PARAMETERS: Final = 999
MAX_OPEN_DATABASES: Final = 16

KILL_GRACE: Final = 2.0  # seconds past MAX_SECONDS before the statement's process is killed

_WORKER_FILE: Final = Path(__file__).resolve().with_name("_storage_worker.py")


@dataclass(frozen=True, slots=True)
class SqlResult:
    """What one statement returned.

    Attributes:
        columns: Column names of the result, in order (empty for statements without rows).
        rows: One dict per row, keyed by column name.
        rows_affected: Rows inserted, updated or deleted (``-1`` for other statements).
        last_row_id: SQLite's ``last_insert_rowid()`` after a statement that changed rows.
    """

    columns: list[str]
    rows: list[dict[str, Any]]
    rows_affected: int
    last_row_id: int | None


def _check_params(params: Sequence[Any] | Mapping[str, Any] | None) -> Any:
    if params is None:
        return ()
    if isinstance(params, Mapping):
        items = list(params.values())
        if any(not isinstance(k, str) for k in params):
            raise StorageError("named parameters need str keys")
        out: Any = dict(params)
    elif isinstance(params, (list, tuple)):
        items = list(params)
        out = tuple(params)
    else:
        raise StorageError("params must be a list, a tuple or a mapping")
    if len(items) > MAX_PARAMETERS:
        raise StorageError(f"at most {MAX_PARAMETERS} parameters")
    for value in items:
        if value is not None and type(value) not in (bool, int, float, str, bytes):
            raise StorageError(
                f"a parameter must be None, bool, int, float, str or bytes, "
                f"not {type(value).__name__}"
            )
        if isinstance(value, (str, bytes)) and len(value) > MAX_VALUE_BYTES:
            raise StorageError(f"a parameter is longer than {MAX_VALUE_BYTES} bytes")
        if isinstance(value, int) and not -(2**63) <= value < 2**63:
            raise StorageError("an integer parameter does not fit in 64 bits")
    return out


def _limits() -> dict[str, Any]:
    """The limits the worker applies, read when each statement is sent (tests lower them)."""
    return {
        "instructions": MAX_INSTRUCTIONS,
        "seconds": MAX_SECONDS,
        "rows": MAX_ROWS,
        "result_bytes": MAX_RESULT_BYTES,
        "value_bytes": MAX_VALUE_BYTES,
        "database_bytes": MAX_DATABASE_BYTES,
        "sql_chars": MAX_SQL_CHARS,
        "parameters": MAX_PARAMETERS,
        "open_databases": MAX_OPEN_DATABASES,
    }


class _Plain(pickle.Unpickler):
    """Unpickles plain values only: a reply that names any class or function is refused."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"a storage reply may not name {module}.{name}")


class _Call:
    """One ``sql()`` call: cancelled by its caller, or running in the worker."""

    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False


class _Worker:
    """The child process that runs statements (see :mod:`._storage_worker`)."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-S", os.fspath(_WORKER_FILE)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            close_fds=True,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in = self.proc.stdin.fileno()
        self._out = self.proc.stdout.fileno()

    def ask(self, request: bytes, timeout: float) -> bytes | None:
        """Send one request and wait for its reply; None when the deadline passed or the
        process ended (killed, or it died) before answering."""
        deadline = time.monotonic() + timeout
        try:
            view = memoryview(_FRAME.pack(len(request)) + request)
            while view:
                view = view[os.write(self._in, view) :]
            head = self._read(_FRAME.size, deadline)
            if head is None:
                return None
            return self._read(_FRAME.unpack(head)[0], deadline)
        except OSError:
            return None

    def _read(self, n: int, deadline: float) -> bytes | None:
        parts: list[bytes] = []
        while n:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._out], [], [], left)[0]:
                return None
            chunk = os.read(self._out, min(n, 1 << 20))
            if not chunk:
                return None
            parts.append(chunk)
            n -= len(chunk)
        return b"".join(parts)

    def kill(self) -> None:
        """Stop the process at once (idempotent); SQLite's journal keeps the files whole."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()

    def close(self) -> None:
        """End the process after its current statement (its input closes), or kill it."""
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=MAX_SECONDS + KILL_GRACE)
        except subprocess.TimeoutExpired:
            pass
        self.kill()


_FRAME: Final = struct.Struct("<Q")


class StoragePool:
    """The per-thread storage databases of one runtime, served by one worker process.

    Statements run one at a time in the worker (:mod:`._storage_worker`). A statement that
    has not answered ``MAX_SECONDS`` + ``KILL_GRACE`` after it was sent, or whose caller is
    cancelled, is stopped by killing the process; the next statement starts a new one.
    """

    def __init__(self, db_path: str) -> None:
        """Place the thread databases in ``<db_path>.storage/``."""
        self._dir = Path(f"{db_path}.storage")
        self._lock = threading.Lock()
        self._worker: _Worker | None = None
        self._running: _Call | None = None
        self._closed = False
        self.stopped = 0  # statements stopped by killing the worker (deadline or cancel)

    def path(self, thread_id: str) -> Path:
        """The database file of a thread (its id hashed, so any id is a safe file name)."""
        digest = hashlib.sha256(thread_id.encode("utf-8", "surrogatepass")).hexdigest()
        return self._dir / f"{digest}.sqlite"

    def run(self, thread_id: str, query: str, params: Any, call: _Call | None = None) -> SqlResult:
        """Run one statement on a thread's database (in a worker thread; blocks until it
        ends, is stopped at its deadline, or is cancelled with :meth:`cancel`)."""
        call = _Call() if call is None else call
        with self._lock:
            if self._closed:
                raise RuntimeClosedError("the runtime's database is closed")
            if call.cancelled:
                raise StorageError("statement cancelled before it ran")
            self._dir.mkdir(mode=0o700, exist_ok=True)
            if self._worker is None:
                self._worker = _Worker()
            worker = self._worker
            limits = _limits()
            request = pickle.dumps(
                (os.fspath(self.path(thread_id)), query, params, limits),
                protocol=pickle.HIGHEST_PROTOCOL,
            )
            # published before the cancelled flag is read again, as cancel() sets the flag
            # before it reads this: one of the two sees the other, so a cancelled call is
            # either never sent or killed
            self._running = call
            try:
                if call.cancelled:
                    raise StorageError("statement cancelled before it ran")
                reply = worker.ask(request, limits["seconds"] + KILL_GRACE)
            finally:
                self._running = None
            if reply is None:
                self.stopped += 1
                worker.kill()
                self._worker = None
                if self._closed:
                    raise RuntimeClosedError("the runtime's database is closed")
                if call.cancelled:
                    raise StorageError("statement stopped: its caller was cancelled")
                raise StorageError(f"statement stopped: it ran longer than {limits['seconds']:g} s")
        return _result(reply)

    def cancel(self, call: _Call) -> None:
        """Cancel a call: it will not start, and if it is running its process is killed."""
        call.cancelled = True
        worker = self._worker
        if self._running is call and worker is not None:
            worker.proc.kill()  # its ask() returns None; run() reaps it

    def close(self) -> None:
        """Stop the worker process (a running statement is stopped)."""
        self._closed = True
        running = self._worker
        if running is not None and self._running is not None:
            running.proc.kill()  # the statement's run() reaps it and raises RuntimeClosedError
        with self._lock:
            worker, self._worker = self._worker, None
        if worker is not None:
            worker.close()


def _result(reply: bytes) -> SqlResult:
    """Decode a worker's reply (plain values only) into a result, or raise its StorageError."""
    try:
        value = _Plain(io.BytesIO(reply)).load()
        if value[0] == "error":
            error = StorageError(str(value[1]))
        else:
            _ok, columns, rows, changed, last = value
            return SqlResult(
                list(columns), [dict(zip(columns, row, strict=True)) for row in rows], changed, last
            )
    except Exception as exc:
        raise StorageError(f"malformed reply from the storage process ({exc})") from None
    raise error


class ThreadStorage:
    """``state.storage``: SQL on tables private to one thread.

    ``await state.storage.sql("INSERT INTO notes (text) VALUES (?)", [text])``. The first call
    creates the thread's database; tables persist with the thread.
    """

    __slots__ = ("_pool", "_thread_id")

    def __init__(self, pool: StoragePool, thread_id: str) -> None:
        """Bind to a thread; obtain it as ``state.storage``."""
        self._pool = pool
        self._thread_id = thread_id

    def __repr__(self) -> str:
        return f"<ThreadStorage {self._thread_id!r}>"

    async def sql(
        self, query: str, params: Sequence[Any] | Mapping[str, Any] | None = None
    ) -> SqlResult:
        """Run one SQL statement with ``?`` (or ``:name``) parameters on the thread's tables.

        Each call is one atomic statement: it all happens or none of it does.

        Args:
            query: One statement (at most 100,000 characters).
            params: Values for its placeholders: None, bool, int, float, str or bytes.

        Returns:
            The rows and counters.

        Raises:
            StorageError: The statement failed, was refused (another schema, ``ATTACH``, a
                ``PRAGMA`` or function outside the allow-lists, a transaction), or went past
                a limit (instructions, time, result rows or bytes, database size).
        """
        if not isinstance(query, str):
            raise StorageError("query must be a str")
        if len(query) > MAX_SQL_CHARS:
            raise StorageError(f"query longer than {MAX_SQL_CHARS} characters")
        checked = _check_params(params)
        call = _Call()
        run = partial(self._pool.run, self._thread_id, query, checked, call)
        try:
            return await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            self._pool.cancel(call)  # the statement stops with its process; then re-raise
            raise
