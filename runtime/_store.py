"""SQLite persistence: one database file per runtime, WAL mode, versioned schema.

Every call runs in a worker thread (``anyio.to_thread.run_sync``) on one connection guarded by a
lock, inside one ``BEGIN IMMEDIATE`` transaction, so the event loop never blocks on disk and a
cancelled caller never leaves a half-written transaction (the worker finishes first).

The schema version is ``PRAGMA user_version``: the number of entries of :data:`MIGRATIONS`
applied. A database written by a newer version is refused rather than guessed at.
``secure_delete`` is on, so overwritten rows do not linger in free pages.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Final, TypeVar

import anyio
import anyio.to_thread

from ._message import Message, MessageKind, Role
from ._result import AttachmentRef
from ._storage import StoragePool
from ._store_approvals import stored_approval_bytes
from ._store_files import (
    FileInfo,
    NewFile,
    copy_attachments,
    free_attachment_path,
    select_file,
    select_files,
    stat_file,
    upsert_file,
)
from ._store_schema import MIGRATIONS
from ._store_snippets import stored_snippet_bytes
from .errors import RuntimeClosedError, StoreError, ThreadQuotaError

__all__ = [
    "DEFAULT_MAX_THREAD_BYTES",
    "MIGRATIONS",
    "FileInfo",
    "NewFile",
    "Store",
    "ThreadRow",
    "dumps",
]

#: What one thread may store in the runtime's database by default (``max_thread_bytes``).
DEFAULT_MAX_THREAD_BYTES: Final = 256 * 2**20

T = TypeVar("T")


def dumps(value: Any) -> str:
    """Serialize JSON compactly, keeping non-ASCII text readable.

    A lone surrogate (a JavaScript string may hold one) has no UTF-8 form, so SQLite could not
    store the text: such a value is written with ``\\u`` escapes instead, which read back as
    the same string.
    """
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return json.dumps(value, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    return text


@dataclass(frozen=True, slots=True)
class ThreadRow:
    """A stored thread: its id, parent, turns, and the scoped names its tools declared."""

    id: str
    parent_id: str | None
    turn_count: int
    scoped: frozenset[str]


class Store:
    """The runtime's database. Open with :meth:`open`; close with :meth:`close` (idempotent).

    Each thread's ``state.storage`` lives in a database file of its own next to this one
    (see :mod:`quickjail.runtime._storage`); :attr:`storage` owns those connections.
    """

    def __init__(
        self,
        conn: sqlite3.Connection,
        path: str,
        max_thread_bytes: int = DEFAULT_MAX_THREAD_BYTES,
    ) -> None:
        """Wrap an open, migrated connection; use :meth:`open`."""
        self._conn: sqlite3.Connection | None = conn
        self._lock = threading.Lock()
        self.storage = StoragePool(path)
        self.max_thread_bytes = max_thread_bytes
        # bytes each thread holds, counted from the database on its first write here, then
        # kept up to date by every write of this store (under _lock)
        self._stored: dict[str, int] = {}

    @classmethod
    async def open(
        cls, path: str | os.PathLike[str], max_thread_bytes: int = DEFAULT_MAX_THREAD_BYTES
    ) -> Store:
        """Open (creating if needed) and migrate the database at ``path``.

        Args:
            path: The database file.
            max_thread_bytes: What one thread may store (messages, files, variables, events).

        Raises:
            StoreError: The file is not a database, or was written by a newer version.
        """
        with anyio.CancelScope(shield=True):  # a cancelled open must not leak the connection
            conn = await anyio.to_thread.run_sync(_connect, os.fspath(path))
        return cls(conn, os.fspath(path), max_thread_bytes)

    def stored_bytes(self, thread_id: str) -> int | None:
        """What this store counts ``thread_id`` as holding, or None before its first write."""
        return self._stored.get(thread_id)

    async def _run_charged(
        self, thread_id: str, nbytes: int, fn: Callable[[sqlite3.Connection], T]
    ) -> T:
        """Run a write of ``nbytes`` new bytes for ``thread_id`` within its quota.

        Raises:
            ThreadQuotaError: The thread would hold more than ``max_thread_bytes``; nothing
                of the write is stored.
        """

        def charged(conn: sqlite3.Connection) -> T:
            used = self._stored.get(thread_id)
            if used is None:
                used = self._stored[thread_id] = _stored_bytes(thread_id, conn)
            if used + nbytes > self.max_thread_bytes:
                raise ThreadQuotaError(
                    f"thread {thread_id!r} holds {used} bytes: storing {nbytes} more would pass "
                    f"its quota of {self.max_thread_bytes} bytes (Runtime(max_thread_bytes=...))"
                )
            value = fn(conn)
            self._stored[thread_id] = used + nbytes
            return value

        return await self._run(charged)

    async def transact(
        self, thread_id: str, nbytes: int, fn: Callable[[sqlite3.Connection], T]
    ) -> T:
        """Run ``fn`` in one transaction, charging ``nbytes`` to the thread's quota."""
        if nbytes:
            return await self._run_charged(thread_id, nbytes, fn)
        return await self._run(fn)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._conn is None

    async def close(self) -> None:
        """Close the connection; safe to call more than once, and even while cancelled."""
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self._close_sync)

    def _close_sync(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
            if conn is not None:
                conn.close()
        self.storage.close()

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return await anyio.to_thread.run_sync(self._transaction, fn)

    def _transaction(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            conn = self._conn
            if conn is None:
                raise RuntimeClosedError("the runtime's database is closed")
            conn.execute("BEGIN IMMEDIATE")
            try:
                value = fn(conn)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            return value

    # ------------------------------------------------------------------ threads

    async def open_thread(
        self, thread_id: str, parent_id: str | None, scoped: frozenset[str]
    ) -> ThreadRow:
        """Create the thread if needed (under ``parent_id``) and record its scoped names.

        Raises:
            ValueError: The thread exists under another parent, or the parent does not exist.
        """
        return await self._run(partial(_open_thread, thread_id, parent_id, scoped))

    async def ancestry(self, thread_id: str, limit: int) -> list[ThreadRow]:
        """Return the thread and its ancestors, nearest first (empty if it does not exist).

        Raises:
            ValueError: The chain is longer than ``limit`` (or loops, in a tampered database).
        """
        return await self._run(partial(_ancestry, thread_id, limit))

    async def bump_turn(self, thread_id: str) -> int:
        """Increment and return the thread's turn count."""
        return await self._run(partial(_bump_turn, thread_id))

    # ------------------------------------------------------------------ messages

    async def add_message(
        self,
        thread_id: str,
        role: Role,
        kind: MessageKind,
        content: Any,
        *,
        tool_call_id: str | None = None,
        tool_name: str | None = None,
        parent_call_id: str | None = None,
    ) -> Message:
        """Append a message (content already redacted) and return it."""
        text = dumps(content)
        row = (thread_id, role, kind, text, tool_call_id, tool_name, parent_call_id)
        return await self._run_charged(thread_id, _nbytes(text), partial(_insert_message, row))

    async def replace_content(self, thread_id: str, message_id: int, content: Any) -> None:
        """Replace a message's content (already redacted): used to redact a ``tool_call``
        again when its tool registered a secret after the call was stored."""
        row = (dumps(content), message_id, thread_id)
        await self._run(partial(_update_content, row))
        await anyio.to_thread.run_sync(self._checkpoint)

    def _checkpoint(self) -> None:
        """Fold the WAL into the database and empty it, so a replaced row's old text (with
        ``secure_delete`` on) survives in neither file."""
        with self._lock:
            if self._conn is not None:
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    async def add_tool_result(
        self,
        thread_id: str,
        content: dict[str, Any],
        attachments: Sequence[AttachmentRef | NewFile],
        *,
        tool_call_id: str | None,
        tool_name: str | None,
        parent_call_id: str | None,
        also: Callable[[sqlite3.Connection], object] | None = None,
    ) -> tuple[Message, list[AttachmentRef]]:
        """Store new attachments under ``/attachments/`` and the result message, atomically.

        ``also`` runs first in the same transaction (an approval's state change); if it
        raises, nothing is stored.

        Returns:
            The message (its content lists the attachment refs) and the refs, in order.
        """
        meta = (thread_id, tool_call_id, tool_name, parent_call_id)
        items = list(attachments)
        nbytes = _nbytes(dumps(content)) + sum(
            len(item.data) for item in items if isinstance(item, NewFile)
        )
        insert = partial(_insert_result, meta, content, items)

        def with_also(conn: sqlite3.Connection) -> tuple[Message, list[AttachmentRef]]:
            if also is not None:
                also(conn)
            return insert(conn)

        return await self._run_charged(thread_id, nbytes, with_also)

    async def get_messages(self, thread_id: str, limit: int | None) -> list[Message]:
        """Return the last ``limit`` messages (all when ``None``), oldest first."""
        return await self._run(partial(_select_messages, thread_id, limit))

    # ------------------------------------------------------------------ variables

    async def set_variable(self, thread_id: str, name: str, kind: str, value: bytes) -> None:
        """Insert or replace a thread variable (``value`` already encrypted for secrets)."""
        nbytes = len(value) + _nbytes(name)
        await self._run_charged(
            thread_id, nbytes, partial(_upsert_variable, thread_id, name, kind, value)
        )

    async def get_variable(self, thread_id: str, name: str) -> tuple[str, bytes] | None:
        """Return ``(type, value)`` of a thread variable, or ``None``."""
        return await self._run(partial(_select_variable, thread_id, name))

    async def find_variable(
        self, thread_ids: Sequence[str], name: str
    ) -> tuple[str, str, bytes] | None:
        """Return ``(thread_id, type, value)`` from the first of ``thread_ids`` that has it."""
        return await self._run(partial(_find_variable, list(thread_ids), name))

    async def list_variables(self, thread_id: str) -> list[tuple[str, str, bytes]]:
        """Return ``(name, type, value)`` of every thread variable."""
        return await self._run(partial(_select_variables, thread_id))

    # ------------------------------------------------------------------ files

    async def write_file(
        self, thread_id: str, path: str, data: bytes, mime_type: str | None
    ) -> FileInfo:
        """Create or replace a file at a normalized path."""
        nbytes = len(data) + _nbytes(path)
        return await self._run_charged(
            thread_id, nbytes, partial(upsert_file, thread_id, path, data, mime_type)
        )

    async def read_file(self, thread_id: str, path: str) -> bytes | None:
        """Return a file's content, or ``None`` if it does not exist."""
        return await self._run(partial(select_file, thread_id, path))

    async def stat(self, thread_id: str, path: str) -> FileInfo | None:
        """Describe a file or a directory (a prefix of stored paths); ``None`` if neither."""
        return await self._run(partial(stat_file, thread_id, path))

    async def list_files(self, thread_id: str, directory: str) -> list[FileInfo]:
        """Return every file under a normalized directory (recursively), by path."""
        return await self._run(partial(select_files, thread_id, directory))

    async def copy_attachments(
        self,
        source: str,
        refs: Sequence[AttachmentRef],
        target: str,
        redact: Callable[[bytes], bytes],
    ) -> list[AttachmentRef]:
        """Copy the files ``refs`` point to from ``source`` into ``target``'s attachments.

        Each copy gets a fresh id and a free path under ``/attachments/`` of the target.

        Raises:
            ThreadFileNotFoundError: A ref names no file of ``source`` or a file of another
                size.
        """
        copy = partial(copy_attachments, source, list(refs), target, redact)
        return await self._run_charged(target, sum(ref.size for ref in refs), copy)

    # ------------------------------------------------------------------ events

    async def add_event(self, thread_id: str, kind: str, data: Any) -> None:
        """Append a thread event (data already redacted)."""
        text = dumps(data)
        await self._run_charged(
            thread_id, _nbytes(text), partial(_insert_event, thread_id, kind, text)
        )


# ---------------------------------------------------------------------- worker-thread functions


def _connect(path: str) -> sqlite3.Connection:
    try:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open the database: {exc}") from None
    try:
        conn.execute("PRAGMA busy_timeout = 5000")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise StoreError(f"the database refused WAL mode (got {mode!r})")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA secure_delete = ON")
        _apply_migrations(conn)
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise StoreError(f"cannot open the database: {exc}") from None
    except BaseException:
        conn.close()
        raise
    return conn


def _apply_migrations(conn: sqlite3.Connection) -> None:
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > len(MIGRATIONS):
        raise StoreError(
            f"the database has schema version {version}; this version of quickjail knows "
            f"up to {len(MIGRATIONS)}"
        )
    for number, migration in enumerate(MIGRATIONS[version:], start=version + 1):
        conn.execute("BEGIN IMMEDIATE")
        try:
            migration(conn)
            conn.execute(f"PRAGMA user_version = {number:d}")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")


_THREAD_COLUMNS: Final = "id, parent_id, turn_count, scoped"


def _thread_row(row: Sequence[Any]) -> ThreadRow:
    scoped = json.loads(row[3])
    return ThreadRow(row[0], row[1], int(row[2]), frozenset(str(name) for name in scoped))


def _open_thread(
    thread_id: str, parent_id: str | None, scoped: frozenset[str], conn: sqlite3.Connection
) -> ThreadRow:
    found = conn.execute("SELECT parent_id FROM threads WHERE id = ?", (thread_id,)).fetchone()
    if found is not None and parent_id is not None and found[0] != parent_id:
        raise ValueError(f"thread {thread_id!r} exists with parent {found[0]!r}, not {parent_id!r}")
    if found is None and parent_id is not None:
        exists = conn.execute("SELECT 1 FROM threads WHERE id = ?", (parent_id,)).fetchone()
        if exists is None:
            raise ValueError(f"parent thread {parent_id!r} does not exist")
    names = dumps(sorted(scoped))
    conn.execute(
        "INSERT INTO threads (id, created_at, parent_id, scoped) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (id) DO UPDATE SET scoped = excluded.scoped",
        (thread_id, time.time(), parent_id, names),
    )
    row = conn.execute(
        f"SELECT {_THREAD_COLUMNS} FROM threads WHERE id = ?", (thread_id,)
    ).fetchone()
    return _thread_row(row)


def _ancestry(thread_id: str, limit: int, conn: sqlite3.Connection) -> list[ThreadRow]:
    chain: list[ThreadRow] = []
    current: str | None = thread_id
    while current is not None:
        if len(chain) >= limit or any(row.id == current for row in chain):
            raise ValueError(f"threads nest at most {limit} deep")
        row = conn.execute(
            f"SELECT {_THREAD_COLUMNS} FROM threads WHERE id = ?", (current,)
        ).fetchone()
        if row is None:
            break
        chain.append(_thread_row(row))
        current = chain[-1].parent_id
    return chain


def _bump_turn(thread_id: str, conn: sqlite3.Connection) -> int:
    conn.execute("UPDATE threads SET turn_count = turn_count + 1 WHERE id = ?", (thread_id,))
    row = conn.execute("SELECT turn_count FROM threads WHERE id = ?", (thread_id,)).fetchone()
    return int(row[0])


_MESSAGE_COLUMNS: Final = (
    "id, thread_id, role, kind, content, tool_call_id, tool_name, parent_call_id, created_at"
)


def _message(row: Sequence[Any]) -> Message:
    return Message(
        id=row[0],
        thread_id=row[1],
        role=row[2],
        kind=row[3],
        content=json.loads(row[4]),
        tool_call_id=row[5],
        tool_name=row[6],
        parent_call_id=row[7],
        created_at=row[8],
    )


def _nbytes(text: str) -> int:
    """The UTF-8 size of stored text (a lone surrogate counts as its 3-byte form)."""
    return len(text.encode("utf-8", "surrogatepass"))


def _stored_bytes(thread_id: str, conn: sqlite3.Connection) -> int:
    """What a thread holds in the database: its messages, files, variables and events."""
    row = conn.execute(
        "SELECT (SELECT coalesce(sum(length(CAST(content AS BLOB))), 0) FROM messages "
        "WHERE thread_id = ?1) + (SELECT coalesce(sum(size + length(CAST(path AS BLOB))), 0) "
        "FROM files WHERE thread_id = ?1) + (SELECT coalesce(sum(length(value) + "
        "length(CAST(name AS BLOB))), 0) FROM variables WHERE thread_id = ?1) + "
        "(SELECT coalesce(sum(length(CAST(data AS BLOB))), 0) FROM events WHERE thread_id = ?1) + "
        + stored_approval_bytes
        + " + "
        + stored_snippet_bytes,
        (thread_id,),
    ).fetchone()
    return int(row[0])


def _insert_message(row: tuple[Any, ...], conn: sqlite3.Connection) -> Message:
    cursor = conn.execute(
        "INSERT INTO messages (thread_id, role, kind, content, tool_call_id, tool_name, "
        "parent_call_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (*row, time.time()),
    )
    found = conn.execute(
        f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE id = ?", (cursor.lastrowid,)
    ).fetchone()
    return _message(found)


def _update_content(row: tuple[Any, ...], conn: sqlite3.Connection) -> None:
    conn.execute("UPDATE messages SET content = ? WHERE id = ? AND thread_id = ?", row)


def _insert_result(
    meta: tuple[str, str | None, str | None, str | None],
    content: dict[str, Any],
    attachments: list[AttachmentRef | NewFile],
    conn: sqlite3.Connection,
) -> tuple[Message, list[AttachmentRef]]:
    thread_id, call_id, tool_name, parent = meta
    now = time.time()
    refs: list[AttachmentRef] = []
    new_ids: list[str] = []
    for item in attachments:
        if isinstance(item, AttachmentRef):
            refs.append(item)
            continue
        path = free_attachment_path(conn, thread_id, item.name)
        ref = AttachmentRef(
            id=f"att_{uuid.uuid4().hex}",
            path=path,
            name=path.rsplit("/", 1)[-1],
            mime_type=item.mime_type,
            size=len(item.data),
            width=item.width,
            height=item.height,
        )
        conn.execute(
            "INSERT INTO files (thread_id, path, id, data, mime_type, size, width, height, "
            "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                thread_id,
                path,
                ref.id,
                item.data,
                ref.mime_type,
                ref.size,
                ref.width,
                ref.height,
                now,
                now,
            ),
        )
        refs.append(ref)
        new_ids.append(ref.id)
    content = {**content, "attachments": [r.model_dump(mode="json") for r in refs]}
    row = (thread_id, "tool", "tool_result", dumps(content), call_id, tool_name, parent)
    message = _insert_message(row, conn)
    conn.executemany(
        "UPDATE files SET message_id = ? WHERE id = ?", [(message.id, i) for i in new_ids]
    )
    return message, refs


def _select_messages(thread_id: str, limit: int | None, conn: sqlite3.Connection) -> list[Message]:
    rows = conn.execute(
        f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE thread_id = ? ORDER BY id DESC LIMIT ?",
        (thread_id, -1 if limit is None else limit),
    ).fetchall()
    return [_message(row) for row in reversed(rows)]


def _upsert_variable(
    thread_id: str, name: str, kind: str, value: bytes, conn: sqlite3.Connection
) -> None:
    conn.execute(
        "INSERT INTO variables (thread_id, name, type, value, updated_at) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (thread_id, name) DO UPDATE SET type = excluded.type, "
        "value = excluded.value, updated_at = excluded.updated_at",
        (thread_id, name, kind, value, time.time()),
    )


def _select_variable(
    thread_id: str, name: str, conn: sqlite3.Connection
) -> tuple[str, bytes] | None:
    row = conn.execute(
        "SELECT type, value FROM variables WHERE thread_id = ? AND name = ?", (thread_id, name)
    ).fetchone()
    return None if row is None else (row[0], bytes(row[1]))


def _find_variable(
    thread_ids: list[str], name: str, conn: sqlite3.Connection
) -> tuple[str, str, bytes] | None:
    for thread_id in thread_ids:
        found = _select_variable(thread_id, name, conn)
        if found is not None:
            return thread_id, found[0], found[1]
    return None


def _select_variables(thread_id: str, conn: sqlite3.Connection) -> list[tuple[str, str, bytes]]:
    rows = conn.execute(
        "SELECT name, type, value FROM variables WHERE thread_id = ? ORDER BY name", (thread_id,)
    ).fetchall()
    return [(row[0], row[1], bytes(row[2])) for row in rows]


def _insert_event(thread_id: str, kind: str, data: str, conn: sqlite3.Connection) -> None:
    conn.execute(
        "INSERT INTO events (thread_id, type, data, created_at) VALUES (?, ?, ?, ?)",
        (thread_id, kind, data, time.time()),
    )
