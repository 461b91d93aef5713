"""``state.storage``: parameterized SQL on a database private to one thread.

Isolation is by construction, not by rewriting SQL text: each thread's tables live in a SQLite
file of their own (``<runtime db>.storage/<sha256 of the thread id>.sqlite``), so the runtime's
tables and other threads' data are simply not in the connection. An authorizer callback keeps
it that way: it refuses ``ATTACH`` (which ``VACUUM INTO`` also needs), ``DETACH``, the ``temp``
schema, transactions and savepoints (each call is one atomic statement), triggers, virtual
tables, every ``PRAGMA`` outside a read-only allow-list and every SQL function outside an
allow-list (so no ``load_extension``). The host bounds the rest: statement size, value size,
database size (``max_page_count``), VM instructions and wall time (progress handler), and the
rows and bytes of a result.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import time
from collections import OrderedDict
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

_PROGRESS_EVERY: Final = 1_000
_PAGE_SIZE: Final = 4096
_CACHE_KIB: Final = 2048

_ALLOWED_PRAGMAS: Final = frozenset(
    {
        "foreign_key_list",
        "index_info",
        "index_list",
        "index_xinfo",
        "table_info",
        "table_list",
        "table_xinfo",
    }
)

_ALLOWED_FUNCTIONS: Final = frozenset(
    """
    abs changes char coalesce concat concat_ws format glob hex ifnull iif instr
    last_insert_rowid length like likelihood likely lower ltrim max min nullif octet_length
    printf quote random randomblob replace round rtrim sign soundex sqlite_version substr
    substring total_changes trim typeof unhex unicode unlikely upper zeroblob
    avg count group_concat string_agg sum total
    date time datetime julianday unixepoch strftime timediff
    acos acosh asin asinh atan atan2 atanh ceil ceiling cos cosh degrees exp floor ln log
    log10 log2 mod pi pow power radians sin sinh sqrt tan tanh trunc
    json json_array json_array_length json_error_position json_extract json_insert
    json_object json_patch json_pretty json_remove json_replace json_set json_type
    json_valid json_quote json_group_array json_group_object json_each json_tree
    jsonb jsonb_array jsonb_extract jsonb_insert jsonb_object jsonb_patch jsonb_remove
    jsonb_replace jsonb_set jsonb_group_array jsonb_group_object
    row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value
    last_value nth_value
    """.split()
)

# actions allowed on the ``main`` schema only (the database name is the 3rd argument)
_MAIN_ONLY_ARG3: Final = frozenset(
    {
        sqlite3.SQLITE_CREATE_INDEX,
        sqlite3.SQLITE_CREATE_TABLE,
        sqlite3.SQLITE_CREATE_VIEW,
        sqlite3.SQLITE_DELETE,
        sqlite3.SQLITE_DROP_INDEX,
        sqlite3.SQLITE_DROP_TABLE,
        sqlite3.SQLITE_DROP_VIEW,
        sqlite3.SQLITE_INSERT,
        sqlite3.SQLITE_READ,
        sqlite3.SQLITE_UPDATE,
    }
)


_ACTION_NAMES: Final = {
    getattr(sqlite3, f"SQLITE_{name}"): name
    for name in """
    CREATE_INDEX CREATE_TABLE CREATE_TEMP_INDEX CREATE_TEMP_TABLE CREATE_TEMP_TRIGGER
    CREATE_TEMP_VIEW CREATE_TRIGGER CREATE_VIEW DELETE DROP_INDEX DROP_TABLE DROP_TEMP_INDEX
    DROP_TEMP_TABLE DROP_TEMP_TRIGGER DROP_TEMP_VIEW DROP_TRIGGER DROP_VIEW INSERT PRAGMA READ
    SELECT TRANSACTION UPDATE ATTACH DETACH ALTER_TABLE REINDEX ANALYZE CREATE_VTABLE
    DROP_VTABLE FUNCTION SAVEPOINT RECURSIVE
    """.split()
}


def _allowed(action: int, arg1: str | None, arg2: str | None, db: str | None) -> bool:
    """What a thread's own statements may do (see the module docstring)."""
    if action == sqlite3.SQLITE_SELECT or action == sqlite3.SQLITE_RECURSIVE:
        return True
    if action == sqlite3.SQLITE_READ and db is None and arg2 == "":
        # count(*) reads no column and names no schema; only ``main`` has tables to count
        return True
    if action in _MAIN_ONLY_ARG3:
        return db == "main"
    if action == sqlite3.SQLITE_ALTER_TABLE:  # arguments: database, table
        return arg1 == "main"
    if action == sqlite3.SQLITE_FUNCTION:
        return (arg2 or "").lower() in _ALLOWED_FUNCTIONS
    if action == sqlite3.SQLITE_PRAGMA:
        return (arg1 or "").lower() in _ALLOWED_PRAGMAS and db in (None, "main")
    return False


class _Guard:
    """The connection's authorizer; remembers the first refusal of a statement to name it."""

    __slots__ = ("refused",)

    def __init__(self) -> None:
        self.refused: str | None = None

    def __call__(
        self, action: int, arg1: str | None, arg2: str | None, db: str | None, _src: str | None
    ) -> int:
        if _allowed(action, arg1, arg2, db):
            return sqlite3.SQLITE_OK
        if self.refused is None:
            what = _ACTION_NAMES.get(action, str(action))
            if action == sqlite3.SQLITE_FUNCTION:
                what = f"function {arg2}()"
            elif action == sqlite3.SQLITE_PRAGMA:
                what = f"PRAGMA {arg1}"
            elif db not in (None, "main"):
                what = f"{what} on schema {db!r}"
            self.refused = what
        return sqlite3.SQLITE_DENY


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


class _Budget:
    """The progress handler of one statement: VM instructions and wall time."""

    __slots__ = ("deadline", "exceeded", "steps")

    def __init__(self) -> None:
        self.steps = 0
        self.deadline = time.monotonic() + MAX_SECONDS
        self.exceeded: str | None = None

    def __call__(self) -> int:
        self.steps += _PROGRESS_EVERY
        if self.steps > MAX_INSTRUCTIONS:
            self.exceeded = f"more than {MAX_INSTRUCTIONS} SQLite instructions"
        elif time.monotonic() > self.deadline:
            self.exceeded = f"longer than {MAX_SECONDS:g} s"
        return 1 if self.exceeded else 0


def _size(value: object) -> int:
    return len(value) if isinstance(value, (str, bytes)) else 8


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


def _open(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        conn.execute(f"PRAGMA page_size = {_PAGE_SIZE:d}")
        conn.execute(f"PRAGMA max_page_count = {MAX_DATABASE_BYTES // _PAGE_SIZE:d}")
        conn.execute(f"PRAGMA cache_size = -{_CACHE_KIB:d}")
        conn.execute("PRAGMA secure_delete = ON")
        conn.execute("PRAGMA trusted_schema = OFF")
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
        conn.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, MAX_SQL_CHARS * 4)
        conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, MAX_PARAMETERS)
        conn.setlimit(sqlite3.SQLITE_LIMIT_TRIGGER_DEPTH, 1)
    except BaseException:
        conn.close()
        raise
    return conn


def _execute(conn: sqlite3.Connection, query: str, params: Any) -> SqlResult:
    guard = _Guard()
    conn.set_authorizer(guard)
    budget = _Budget()
    conn.set_progress_handler(budget, _PROGRESS_EVERY)
    try:
        cursor = conn.execute(query, params)
        columns = [d[0] for d in cursor.description or ()]
        rows: list[dict[str, Any]] = []
        size = 0
        while batch := cursor.fetchmany(256):
            for row in batch:
                size += sum(_size(v) for v in row)
                if len(rows) >= MAX_ROWS or size > MAX_RESULT_BYTES:
                    cursor.close()
                    raise StorageError(
                        f"the result has more than {MAX_ROWS} rows or {MAX_RESULT_BYTES} "
                        "bytes; use LIMIT"
                    )
                rows.append(dict(zip(columns, row, strict=True)))
        changed = cursor.rowcount
        last = cursor.lastrowid if changed > 0 and not columns else None
        return SqlResult(columns, rows, changed, last)
    except sqlite3.Error as exc:
        if budget.exceeded:
            raise StorageError(f"statement stopped: it ran {budget.exceeded}") from None
        if guard.refused is not None:
            raise StorageError(
                f"statement refused: {guard.refused} is not allowed on thread storage"
            ) from None
        raise StorageError(f"{type(exc).__name__}: {exc}") from None
    finally:
        conn.set_progress_handler(None, 0)
        conn.set_authorizer(None)
        if conn.in_transaction:  # a statement that failed half-way never leaves one open
            conn.execute("ROLLBACK")


class _Database:
    """One open thread database; ``closed`` is set under ``lock`` when the pool evicts it."""

    __slots__ = ("closed", "conn", "lock")

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.lock = threading.Lock()
        self.closed = False

    def close(self) -> None:
        with self.lock:
            self.closed = True
            self.conn.close()


class StoragePool:
    """The per-thread storage databases of one runtime, opened lazily, a few at a time."""

    def __init__(self, db_path: str) -> None:
        """Place the thread databases in ``<db_path>.storage/``."""
        self._dir = Path(f"{db_path}.storage")
        self._lock = threading.Lock()
        self._open: OrderedDict[str, _Database] = OrderedDict()
        self._closed = False

    def path(self, thread_id: str) -> Path:
        """The database file of a thread (its id hashed, so any id is a safe file name)."""
        digest = hashlib.sha256(thread_id.encode("utf-8", "surrogatepass")).hexdigest()
        return self._dir / f"{digest}.sqlite"

    def _database(self, thread_id: str) -> _Database:
        with self._lock:
            if self._closed:
                raise RuntimeClosedError("the runtime's database is closed")
            found = self._open.get(thread_id)
            if found is not None:
                self._open.move_to_end(thread_id)
                return found
            self._dir.mkdir(mode=0o700, exist_ok=True)
            db = _Database(_open(os.fspath(self.path(thread_id))))
            self._open[thread_id] = db
            evicted = []
            while len(self._open) > MAX_OPEN_DATABASES:
                evicted.append(self._open.popitem(last=False)[1])
        for old in evicted:  # outside the pool lock: it may wait for a running statement
            old.close()
        return db

    def run(self, thread_id: str, query: str, params: Any) -> SqlResult:
        """Run one statement on a thread's database (in a worker thread)."""
        while True:
            db = self._database(thread_id)
            with db.lock:
                if not db.closed:  # evicted between lookup and lock: open it again
                    return _execute(db.conn, query, params)

    def close(self) -> None:
        """Close every open thread database."""
        with self._lock:
            self._closed = True
            dbs = list(self._open.values())
            self._open.clear()
        for db in dbs:
            db.close()


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
        call = partial(self._pool.run, self._thread_id, query, checked)
        return await anyio.to_thread.run_sync(call)
