"""The process that runs thread-storage statements (``state.storage.sql``), apart from the host.

One SQLite C function call is not interruptible: neither a progress handler nor
``sqlite3_interrupt`` is consulted inside it, and some built-ins take time quadratic in their
arguments (``instr``, ``replace``, a two-argument ``trim``, ``json_patch``: seconds to hours
for arguments within the length limit). So the statements of a runtime's thread databases run
in this child process, and the host enforces the time bound from outside: when a statement
has not answered by its deadline, or its caller is cancelled, the host kills the process
(SQLite's journal keeps every database consistent) and starts another for the next call.
Inside, the progress handler still stops a statement at its instruction or time budget with
a clear message, and the limits of each connection (value length, LIKE pattern length, heap)
bound what one call can hold.

The file imports only the standard library and no module of the package, so the child starts
with ``python -I -S <this file>``. Requests and replies are pickles of plain values (tuples,
lists, dicts, str, bytes, numbers, None), framed by an 8-byte little-endian length; the host
unpickles replies without resolving any global. The child exits when its stdin closes.
"""

from __future__ import annotations

import os
import pickle
import sqlite3
import struct
import sys
import time
from collections import OrderedDict
from typing import Any, Final

FRAME: Final = struct.Struct("<Q")
_PROGRESS_EVERY: Final = 1_000
_PAGE_SIZE: Final = 4096
_CACHE_KIB: Final = 2048
LIKE_PATTERN_CHARS: Final = 10_000
HEAP_BYTES: Final = 512 * 1024 * 1024  # PRAGMA hard_heap_limit of the child

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


class Refused(Exception):
    """A statement failed, was refused or went past a limit; its message is the caller's."""


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


class _Budget:
    """The progress handler of one statement: VM instructions and wall time."""

    __slots__ = ("deadline", "exceeded", "max_instructions", "max_seconds", "steps")

    def __init__(self, max_instructions: int, max_seconds: float) -> None:
        self.steps = 0
        self.max_instructions = max_instructions
        self.max_seconds = max_seconds
        self.deadline = time.monotonic() + max_seconds
        self.exceeded: str | None = None

    def __call__(self) -> int:
        self.steps += _PROGRESS_EVERY
        if self.steps > self.max_instructions:
            self.exceeded = f"more than {self.max_instructions} SQLite instructions"
        elif time.monotonic() > self.deadline:
            self.exceeded = f"longer than {self.max_seconds:g} s"
        return 1 if self.exceeded else 0


def _size(value: object) -> int:
    return len(value) if isinstance(value, (str, bytes)) else 8


def open_database(path: str, limits: dict[str, Any]) -> sqlite3.Connection:
    """Open a thread database with the connection limits (``limits`` as the host sends them)."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        conn.execute(f"PRAGMA page_size = {_PAGE_SIZE:d}")
        conn.execute(f"PRAGMA max_page_count = {int(limits['database_bytes']) // _PAGE_SIZE:d}")
        conn.execute(f"PRAGMA cache_size = -{_CACHE_KIB:d}")
        conn.execute(f"PRAGMA hard_heap_limit = {HEAP_BYTES:d}")
        conn.execute("PRAGMA secure_delete = ON")
        conn.execute("PRAGMA trusted_schema = OFF")
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, int(limits["value_bytes"]))
        conn.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, int(limits["sql_chars"]) * 4)
        conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, int(limits["parameters"]))
        conn.setlimit(sqlite3.SQLITE_LIMIT_TRIGGER_DEPTH, 1)
        conn.setlimit(sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH, LIKE_PATTERN_CHARS)
        conn.setlimit(sqlite3.SQLITE_LIMIT_WORKER_THREADS, 0)
    except BaseException:
        conn.close()
        raise
    return conn


def execute(
    conn: sqlite3.Connection, query: str, params: Any, limits: dict[str, Any]
) -> tuple[list[str], list[tuple[Any, ...]], int, int | None]:
    """Run one statement: ``(columns, rows, rows_affected, last_row_id)``.

    Raises:
        Refused: the statement failed, was refused or went past a limit.
    """
    guard = _Guard()
    conn.set_authorizer(guard)
    budget = _Budget(int(limits["instructions"]), float(limits["seconds"]))
    conn.set_progress_handler(budget, _PROGRESS_EVERY)
    max_rows, max_bytes = int(limits["rows"]), int(limits["result_bytes"])
    try:
        cursor = conn.execute(query, params)
        columns = [d[0] for d in cursor.description or ()]
        rows: list[tuple[Any, ...]] = []
        size = 0
        while batch := cursor.fetchmany(256):
            for row in batch:
                size += sum(_size(v) for v in row)
                if len(rows) >= max_rows or size > max_bytes:
                    cursor.close()
                    raise Refused(
                        f"the result has more than {max_rows} rows or {max_bytes} bytes; use LIMIT"
                    )
                rows.append(tuple(row))
        changed = cursor.rowcount
        last = cursor.lastrowid if changed > 0 and not columns else None
        return columns, rows, changed, last
    except sqlite3.Error as exc:
        if budget.exceeded:
            raise Refused(f"statement stopped: it ran {budget.exceeded}") from None
        if guard.refused is not None:
            raise Refused(
                f"statement refused: {guard.refused} is not allowed on thread storage"
            ) from None
        raise Refused(f"{type(exc).__name__}: {exc}") from None
    finally:
        conn.set_progress_handler(None, 0)
        conn.set_authorizer(None)
        if conn.in_transaction:  # a statement that failed half-way never leaves one open
            conn.execute("ROLLBACK")


def _read_exactly(fd: int, n: int) -> bytes | None:
    parts: list[bytes] = []
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            return None
        parts.append(chunk)
        n -= len(chunk)
    return b"".join(parts)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def serve(fd_in: int, fd_out: int) -> None:
    """Answer requests ``(path, query, params, limits)`` until the input closes.

    Each reply is ``("ok", columns, rows, rows_affected, last_row_id)`` or
    ``("error", message)``; connections stay open, the least recently used closed first.
    """
    conns: OrderedDict[str, sqlite3.Connection] = OrderedDict()
    while True:
        head = _read_exactly(fd_in, FRAME.size)
        if head is None:
            break
        body = _read_exactly(fd_in, FRAME.unpack(head)[0])
        if body is None:
            break
        path, query, params, limits = pickle.loads(body)  # from the host that started us
        try:
            conn = conns.get(path)
            if conn is None:
                conn = conns[path] = open_database(path, limits)
                while len(conns) > int(limits["open_databases"]):
                    conns.popitem(last=False)[1].close()
            conns.move_to_end(path)
            reply: tuple[Any, ...] = ("ok", *execute(conn, query, params, limits))
        except Refused as exc:
            reply = ("error", str(exc))
        except (sqlite3.Error, OSError) as exc:
            reply = ("error", f"{type(exc).__name__}: {exc}")
        data = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
        _write_all(fd_out, FRAME.pack(len(data)) + data)
    for conn in conns.values():
        conn.close()


if __name__ == "__main__":
    serve(sys.stdin.fileno(), sys.stdout.fileno())
