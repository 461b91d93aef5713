"""The database's schema: ordered migrations, each one transaction (see :mod:`._store`).

The database's ``user_version`` counts the migrations applied; append only.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Final

from ._store_approvals import MIGRATION_V3
from ._store_snippets import MIGRATION_V4

__all__ = ["MIGRATIONS"]

_V1: Final = (
    """CREATE TABLE threads (
        id TEXT PRIMARY KEY,
        created_at REAL NOT NULL,
        turn_count INTEGER NOT NULL DEFAULT 0
    )""",
    """CREATE TABLE messages (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        thread_id TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
        role TEXT NOT NULL,
        kind TEXT NOT NULL,
        content TEXT NOT NULL,
        tool_call_id TEXT,
        tool_name TEXT,
        parent_call_id TEXT,
        created_at REAL NOT NULL
    )""",
    "CREATE INDEX messages_by_thread ON messages(thread_id, id)",
    """CREATE TABLE files (
        thread_id TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
        path TEXT NOT NULL,
        id TEXT NOT NULL UNIQUE,
        data BLOB NOT NULL,
        mime_type TEXT,
        size INTEGER NOT NULL,
        width INTEGER,
        height INTEGER,
        description TEXT,
        message_id INTEGER REFERENCES messages(id) ON DELETE SET NULL,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        PRIMARY KEY (thread_id, path)
    )""",
    """CREATE TABLE variables (
        thread_id TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        type TEXT NOT NULL CHECK (type IN ('text', 'secret')),
        value BLOB NOT NULL,
        updated_at REAL NOT NULL,
        PRIMARY KEY (thread_id, name)
    )""",
    """CREATE TABLE events (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        thread_id TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
        type TEXT NOT NULL,
        data TEXT NOT NULL,
        created_at REAL NOT NULL
    )""",
)


_V2: Final = (
    "ALTER TABLE threads ADD COLUMN parent_id TEXT REFERENCES threads(id) ON DELETE CASCADE",
    "ALTER TABLE threads ADD COLUMN scoped TEXT NOT NULL DEFAULT '[]'",
    "CREATE INDEX threads_by_parent ON threads(parent_id)",
)


def _migrate_v1(conn: sqlite3.Connection) -> None:
    """Create threads, messages, files, variables and events."""
    for statement in _V1:
        conn.execute(statement)


def _migrate_v2(conn: sqlite3.Connection) -> None:
    """Parent and child threads: each thread's parent, and the scoped names its tools declare."""
    for statement in _V2:
        conn.execute(statement)


def _migrate_v3(conn: sqlite3.Connection) -> None:
    """Approvals: calls waiting for a decision, and the pauses (batches, programs) they hold."""
    for statement in MIGRATION_V3:
        conn.execute(statement)


def _migrate_v4(conn: sqlite3.Connection) -> None:
    """Snippets: programs saved by name on a thread, callable from code mode."""
    for statement in MIGRATION_V4:
        conn.execute(statement)


#: Ordered migrations; the database's ``user_version`` counts those applied. Append only.
MIGRATIONS: Final[Sequence[Callable[[sqlite3.Connection], None]]] = (
    _migrate_v1,
    _migrate_v2,
    _migrate_v3,
    _migrate_v4,
)
