"""Snippets in the database: a thread's saved programs, by name (see :mod:`._snippets`)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from typing import Any, Final

__all__ = [
    "MIGRATION_V4",
    "count_snippets",
    "delete_snippet",
    "select_snippet",
    "select_snippets",
    "stored_snippet_bytes",
    "upsert_snippet",
]

MIGRATION_V4: Final = (
    """CREATE TABLE snippets (
        thread_id TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        description TEXT NOT NULL,
        code TEXT NOT NULL,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        PRIMARY KEY (thread_id, name)
    )""",
)

#: What the table adds to a thread's stored bytes (for its quota).
stored_snippet_bytes: Final = (
    "(SELECT coalesce(sum(length(CAST(name AS BLOB)) + length(CAST(description AS BLOB)) + "
    "length(CAST(code AS BLOB))), 0) FROM snippets WHERE thread_id = ?1)"
)


def upsert_snippet(
    thread_id: str, name: str, description: str, code: str, conn: sqlite3.Connection
) -> None:
    now = time.time()
    conn.execute(
        "INSERT INTO snippets (thread_id, name, description, code, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (thread_id, name) DO UPDATE SET "
        "description = excluded.description, code = excluded.code, "
        "updated_at = excluded.updated_at",
        (thread_id, name, description, code, now, now),
    )


def count_snippets(thread_id: str, conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT count(*) FROM snippets WHERE thread_id = ?", (thread_id,))
    return int(row.fetchone()[0])


def delete_snippet(thread_id: str, name: str, conn: sqlite3.Connection) -> bool:
    cursor = conn.execute(
        "DELETE FROM snippets WHERE thread_id = ? AND name = ?", (thread_id, name)
    )
    return cursor.rowcount > 0


def select_snippets(thread_id: str, conn: sqlite3.Connection) -> list[Sequence[Any]]:
    return conn.execute(
        # the start of the code is enough for a listing (describe shows at most that much)
        "SELECT name, description, substr(code, 1, 4000) FROM snippets WHERE thread_id = ? "
        "ORDER BY name",
        (thread_id,),
    ).fetchall()


def select_snippet(thread_id: str, name: str, conn: sqlite3.Connection) -> Sequence[Any] | None:
    row: Sequence[Any] | None = conn.execute(
        "SELECT name, description, code FROM snippets WHERE thread_id = ? AND name = ?",
        (thread_id, name),
    ).fetchone()
    return row
