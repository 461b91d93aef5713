"""The thread files in SQLite: their metadata and the worker-thread functions that read and
write them (``Store`` runs each in its transaction; see :mod:`._store`).

A file is a row of ``files`` keyed by ``(thread_id, path)`` with a stable ``id`` (kept when
the file is rewritten); attachments are files under ``/attachments/``.
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from ._paths import ATTACHMENTS_DIR, normalize_path
from ._result import AttachmentRef
from .errors import ThreadFileNotFoundError

__all__ = [
    "FileInfo",
    "NewFile",
    "copy_attachments",
    "free_attachment_path",
    "select_file",
    "select_files",
    "stat_file",
    "upsert_file",
]


@dataclass(frozen=True, slots=True)
class FileInfo:
    """Metadata of a stored file (``id`` is ``None`` for a directory)."""

    path: str
    size: int
    mime_type: str | None
    updated_at: float
    is_dir: bool = False
    id: str | None = None


@dataclass(frozen=True, slots=True)
class NewFile:
    """An attachment to store with a tool result."""

    name: str
    data: bytes
    mime_type: str
    width: int | None
    height: int | None


def free_attachment_path(conn: sqlite3.Connection, thread_id: str, name: str) -> str:
    stem, dot, ext = name.rpartition(".")
    if not dot or not stem:
        stem, dot, ext = name, "", ""
    candidate, counter = name, 1
    while conn.execute(
        "SELECT 1 FROM files WHERE thread_id = ? AND path = ?",
        (thread_id, f"{ATTACHMENTS_DIR}/{candidate}"),
    ).fetchone():
        candidate = f"{stem}-{counter}{dot}{ext}"
        counter += 1
    return f"{ATTACHMENTS_DIR}/{candidate}"


def upsert_file(
    thread_id: str, path: str, data: bytes, mime_type: str | None, conn: sqlite3.Connection
) -> FileInfo:
    now = time.time()
    conn.execute(
        "INSERT INTO files (thread_id, path, id, data, mime_type, size, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (thread_id, path) DO UPDATE SET "
        "data = excluded.data, mime_type = excluded.mime_type, size = excluded.size, "
        "updated_at = excluded.updated_at",
        (thread_id, path, f"file_{uuid.uuid4().hex}", data, mime_type, len(data), now, now),
    )
    (file_id,) = conn.execute(  # a rewritten file keeps its id
        "SELECT id FROM files WHERE thread_id = ? AND path = ?", (thread_id, path)
    ).fetchone()
    return FileInfo(path=path, size=len(data), mime_type=mime_type, updated_at=now, id=file_id)


def select_file(thread_id: str, path: str, conn: sqlite3.Connection) -> bytes | None:
    row = conn.execute(
        "SELECT data FROM files WHERE thread_id = ? AND path = ?", (thread_id, path)
    ).fetchone()
    return None if row is None else bytes(row[0])


def _under(directory: str) -> tuple[str, str]:
    """The range ``[low, high)`` of the paths under ``directory``, compared exactly.

    Every path under ``/a`` starts with ``/a/``; as ``0`` follows ``/`` in code-point (and
    SQLite's binary UTF-8) order, those are exactly the paths in ``["/a/", "/a0")``. Unlike
    a ``LIKE`` pattern this is case-sensitive and has no wildcards.
    """
    low = "/" if directory == "/" else directory + "/"
    return low, low[:-1] + "0"


def stat_file(thread_id: str, path: str, conn: sqlite3.Connection) -> FileInfo | None:
    row = conn.execute(
        "SELECT size, mime_type, updated_at, id FROM files WHERE thread_id = ? AND path = ?",
        (thread_id, path),
    ).fetchone()
    if row is not None:
        return FileInfo(path=path, size=row[0], mime_type=row[1], updated_at=row[2], id=row[3])
    row = conn.execute(
        "SELECT MAX(updated_at) FROM files WHERE thread_id = ? AND path >= ? AND path < ?",
        (thread_id, *_under(path)),
    ).fetchone()
    if path != "/" and (row is None or row[0] is None):
        return None
    updated = (row[0] if row else None) or 0.0
    return FileInfo(path=path, size=0, mime_type=None, updated_at=updated, is_dir=True)


def select_files(thread_id: str, directory: str, conn: sqlite3.Connection) -> list[FileInfo]:
    rows = conn.execute(
        "SELECT path, size, mime_type, updated_at, id FROM files WHERE thread_id = ? "
        "AND path >= ? AND path < ? ORDER BY path",
        (thread_id, *_under(directory)),
    ).fetchall()
    return [FileInfo(path=r[0], size=r[1], mime_type=r[2], updated_at=r[3], id=r[4]) for r in rows]


def copy_attachments(
    source: str,
    refs: list[AttachmentRef],
    target: str,
    redact: Callable[[bytes], bytes],
    conn: sqlite3.Connection,
) -> list[AttachmentRef]:
    copies: list[AttachmentRef] = []
    now = time.time()
    for ref in refs:
        path = normalize_path(ref.path)
        row = conn.execute(
            "SELECT data, mime_type, width, height, description FROM files "
            "WHERE thread_id = ? AND path = ?",
            (source, path),
        ).fetchone()
        if row is None or len(row[0]) != ref.size:
            raise ThreadFileNotFoundError(
                f"attachment {path!r} is not a file of thread {source!r} of {ref.size} bytes"
            )
        data = redact(bytes(row[0]))
        new_path = free_attachment_path(conn, target, path.rsplit("/", 1)[-1])
        copy = AttachmentRef(
            id=f"att_{uuid.uuid4().hex}",
            path=new_path,
            name=new_path.rsplit("/", 1)[-1],
            mime_type=row[1] or ref.mime_type,
            size=len(data),
            width=row[2],
            height=row[3],
            description=ref.description if ref.description is not None else row[4],
        )
        conn.execute(
            "INSERT INTO files (thread_id, path, id, data, mime_type, size, width, height, "
            "description, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                target,
                new_path,
                copy.id,
                data,
                copy.mime_type,
                copy.size,
                copy.width,
                copy.height,
                copy.description,
                now,
                now,
            ),
        )
        copies.append(copy)
    return copies
