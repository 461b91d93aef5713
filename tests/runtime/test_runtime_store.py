"""Persistence: one real SQLite file, WAL, versioned schema, explicit idempotent close."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from quickjail import runtime
from quickjail.runtime._store import MIGRATIONS
from quickjail.runtime.errors import RuntimeClosedError, StoreError

pytestmark = pytest.mark.anyio


def _exists(path: Path) -> bool:
    return path.exists()


def _write(path: Path, data: bytes) -> None:
    path.write_bytes(data)


def _query(db_path: Path, sql: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(db_path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


async def test_database_is_one_wal_file_at_the_latest_schema_version(
    open_runtime: Callable[..., runtime.Runtime], db_path: Path
) -> None:
    async with open_runtime() as rt:
        await rt.thread("t1")
        assert _exists(Path(f"{db_path}-wal"))
    assert _query(db_path, "PRAGMA journal_mode") == [("wal",)]
    assert _query(db_path, "PRAGMA user_version") == [(len(MIGRATIONS),)]
    tables = {r[0] for r in _query(db_path, "SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"threads", "messages", "files", "variables", "events"} <= tables


async def test_reopening_keeps_data_and_does_not_rerun_migrations(
    open_runtime: Callable[..., runtime.Runtime], db_path: Path
) -> None:
    async with open_runtime() as rt:
        state = (await rt.thread("keep")).state
        await runtime.helpers.inject_message(state, "remember me")
    async with open_runtime() as rt:
        (message,) = await runtime.helpers.get_messages((await rt.thread("keep")).state)
    assert message.content == "remember me" and message.role == "user"


async def test_database_from_a_newer_version_is_refused(
    open_runtime: Callable[..., runtime.Runtime], db_path: Path
) -> None:
    conn = sqlite3.connect(db_path)
    conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    conn.close()
    with pytest.raises(StoreError, match="schema version"):
        async with open_runtime():
            pass


async def test_a_file_that_is_not_a_database_is_refused(
    open_runtime: Callable[..., runtime.Runtime], db_path: Path
) -> None:
    _write(db_path, b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="cannot open"):
        async with open_runtime():
            pass


async def test_close_is_idempotent_and_use_after_close_raises(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    rt = open_runtime()
    async with rt:
        thread = await rt.thread()
    await rt.aclose()
    await rt.aclose()
    with pytest.raises(RuntimeClosedError):
        await rt.thread()
    with pytest.raises(RuntimeClosedError):
        await thread.state.write_file("a.txt", "x")
    with pytest.raises(RuntimeClosedError):
        async with rt:
            pass


async def test_thread_before_open_raises(open_runtime: Callable[..., runtime.Runtime]) -> None:
    with pytest.raises(RuntimeClosedError, match="not open"):
        await open_runtime().thread()


async def test_many_concurrent_writers_share_one_connection_safely(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    async with open_runtime() as rt:
        state = (await rt.thread()).state

        async def write(i: int) -> None:
            await state.write_file(f"f/{i:03d}.txt", str(i))
            await runtime.helpers.inject_message(state, i)

        async with anyio.create_task_group() as tg:
            for i in range(50):
                tg.start_soon(write, i)
        assert len(await state.list_files("f")) == 50
        assert sorted(m.content for m in await runtime.helpers.get_messages(state)) == list(
            range(50)
        )


async def test_reopening_a_thread_by_id_and_creating_a_new_one(rt: runtime.Runtime) -> None:
    a = await rt.thread("fixed-id")
    b = await rt.thread("fixed-id")
    c = await rt.thread()
    assert a.thread_id == b.thread_id == "fixed-id"
    assert c.thread_id != a.thread_id and len(c.thread_id) == 32
    with pytest.raises(ValueError, match="thread_id"):
        await rt.thread("")


async def test_closing_inside_a_cancelled_scope_still_closes_the_database(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    rt = open_runtime()
    with anyio.CancelScope() as scope:
        async with rt:
            await rt.thread()
            store = rt._store
            scope.cancel()
            await anyio.sleep(1)  # cancelled here; __aexit__ runs inside the cancelled scope
    assert scope.cancelled_caught
    assert store is not None and store.closed
    with pytest.raises(RuntimeClosedError):
        await rt.thread()
