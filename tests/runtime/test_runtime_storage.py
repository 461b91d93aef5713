"""``state.storage.sql``: tables private to a thread, refused escapes, bounded statements."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from quickjail import runtime
from quickjail.runtime import ThreadState, ToolResult, define_tool
from quickjail.runtime.errors import StorageError
from quickjail.runtime.helpers import SqlResult

pytestmark = pytest.mark.anyio


def _names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


async def test_sql_round_trips_rows_with_bound_parameters(rt: runtime.Runtime) -> None:
    sql = (await rt.thread()).state.storage.sql
    await sql("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT, data BLOB, score REAL)")
    inserted = await sql(
        "INSERT INTO notes (text, data, score) VALUES (?, ?, ?)", ["it's; DROP TABLE", b"\0", 1.5]
    )
    assert inserted == SqlResult(columns=[], rows=[], rows_affected=1, last_row_id=1)
    await sql("INSERT INTO notes (text) VALUES (:t)", {"t": "second"})
    found = await sql("SELECT id, text, data FROM notes WHERE score IS NOT ? ORDER BY id", [None])
    assert found.columns == ["id", "text", "data"]
    assert found.rows == [{"id": 1, "text": "it's; DROP TABLE", "data": b"\0"}]
    updated = await sql("UPDATE notes SET score = 0")
    assert updated.rows_affected == 2


async def test_tables_are_private_to_their_thread(rt: runtime.Runtime) -> None:
    a, b = (await rt.thread()).state, (await rt.thread()).state
    await a.storage.sql("CREATE TABLE kv (k TEXT, v TEXT)")
    await a.storage.sql("INSERT INTO kv VALUES ('owner', 'a')")
    with pytest.raises(StorageError, match="no such table: kv"):
        await b.storage.sql("SELECT * FROM kv")
    await b.storage.sql("CREATE TABLE kv (k TEXT, v TEXT)")
    await b.storage.sql("INSERT INTO kv VALUES ('owner', 'b')")
    assert (await a.storage.sql("SELECT v FROM kv")).rows == [{"v": "a"}]
    assert (await b.storage.sql("SELECT v FROM kv")).rows == [{"v": "b"}]
    listed = await b.storage.sql("SELECT name FROM sqlite_master")
    assert listed.rows == [{"name": "kv"}]


async def test_the_runtimes_own_tables_are_out_of_reach(rt: runtime.Runtime) -> None:
    thread = await rt.thread()
    await thread.state.set_env("NAME", "value")
    for table in ("threads", "variables", "messages", "files", "events"):
        with pytest.raises(StorageError, match=f"no such table: {table}"):
            await thread.state.storage.sql(f"SELECT * FROM {table}")


@pytest.mark.parametrize(
    ("statement", "refused"),
    [
        ("ATTACH DATABASE '{dir}/other.db' AS other", "ATTACH"),
        ("ATTACH DATABASE ':memory:' AS other", "ATTACH"),
        ("DETACH DATABASE main", "DETACH"),
        ("VACUUM INTO '{dir}/stolen.db'", "ATTACH"),
        ("PRAGMA writable_schema = ON", "PRAGMA writable_schema"),
        ("PRAGMA journal_mode = OFF", "PRAGMA journal_mode"),
        ("PRAGMA max_page_count = 2147483647", "PRAGMA max_page_count"),
        ("PRAGMA database_list", "PRAGMA database_list"),
        ("PRAGMA temp.table_info(sqlite_temp_master)", "PRAGMA table_info"),
        ("SELECT load_extension('libevil')", "function load_extension()"),
        ("SELECT fts3_tokenizer('simple')", "function fts3_tokenizer()"),
        ("CREATE TEMP TABLE t (a)", "INSERT on schema 'temp'"),
        ("CREATE TABLE temp.t (a)", "INSERT on schema 'temp'"),
        ("SELECT * FROM temp.sqlite_master", "READ on schema 'temp'"),
        ("BEGIN", "TRANSACTION"),
        ("SAVEPOINT s", "SAVEPOINT"),
        ("CREATE TRIGGER tr AFTER INSERT ON mine BEGIN SELECT 1; END", "CREATE_TRIGGER"),
        ("CREATE VIRTUAL TABLE v USING fts5(a)", "CREATE_VTABLE"),
        ("ANALYZE", "ANALYZE"),
    ],
)
async def test_statements_that_could_leave_the_threads_database_are_refused(
    rt: runtime.Runtime, statement: str, refused: str, tmp_path: Path
) -> None:
    sql = (await rt.thread()).state.storage.sql
    await sql("CREATE TABLE mine (a)")
    with pytest.raises(StorageError) as caught:
        await sql(statement.format(dir=tmp_path))
    assert str(caught.value) == f"statement refused: {refused} is not allowed on thread storage"
    assert _names(tmp_path) == [
        "agent.db",
        "agent.db-shm",
        "agent.db-wal",
        "agent.db.storage",
    ]
    assert (await sql("SELECT count(*) AS n FROM mine")).rows == [{"n": 0}]


async def test_read_only_schema_pragmas_are_allowed(rt: runtime.Runtime) -> None:
    sql = (await rt.thread()).state.storage.sql
    await sql("CREATE TABLE t (a INTEGER, b TEXT)")
    columns = await sql("PRAGMA table_info(t)")
    assert [row["name"] for row in columns.rows] == ["a", "b"]


async def test_one_statement_per_call(rt: runtime.Runtime) -> None:
    sql = (await rt.thread()).state.storage.sql
    with pytest.raises(StorageError, match="one statement"):
        await sql("CREATE TABLE a (x); CREATE TABLE b (x)")
    assert (await sql("SELECT count(*) AS n FROM sqlite_master")).rows == [{"n": 0}]


async def test_a_runaway_statement_is_stopped(rt: runtime.Runtime) -> None:
    sql = (await rt.thread()).state.storage.sql
    with pytest.raises(StorageError, match="statement stopped: it ran"):
        await sql(
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c"
        )
    assert (await sql("SELECT 1 AS one")).rows == [{"one": 1}]  # the connection still works


async def test_results_values_and_the_database_are_bounded(rt: runtime.Runtime) -> None:
    from quickjail.runtime._storage import MAX_DATABASE_BYTES, MAX_ROWS, MAX_VALUE_BYTES

    sql = (await rt.thread()).state.storage.sql
    many = f"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT {MAX_ROWS + 1}) "
    assert len((await sql(many + "SELECT x FROM c LIMIT ?", [MAX_ROWS])).rows) == MAX_ROWS
    with pytest.raises(StorageError, match=f"more than {MAX_ROWS} rows"):
        await sql(many + "SELECT x FROM c")
    with pytest.raises(StorageError, match="too big"):
        await sql("SELECT zeroblob(?) AS z", [MAX_VALUE_BYTES + 1])
    await sql("CREATE TABLE big (b BLOB)")
    with pytest.raises(StorageError, match="full"):
        for _ in range(2 * MAX_DATABASE_BYTES // MAX_VALUE_BYTES + 2):
            await sql("INSERT INTO big VALUES (zeroblob(?))", [MAX_VALUE_BYTES // 2])


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ([object()], "a parameter must be None, bool, int, float, str or bytes"),
        ([2**70], "64 bits"),
        ("abc", "params must be a list"),
        ({1: "x"}, "str keys"),
    ],
)
async def test_parameters_are_checked(rt: runtime.Runtime, params: Any, message: str) -> None:
    sql = (await rt.thread()).state.storage.sql
    with pytest.raises(StorageError, match=message):
        await sql("SELECT ?", params)


async def test_storage_persists_with_the_thread_and_sits_outside_the_runtime_db(
    open_runtime: Callable[..., runtime.Runtime], db_path: Path
) -> None:
    async with open_runtime() as rt:
        sql = (await rt.thread("keep")).state.storage.sql
        await sql("CREATE TABLE t (a)")
        await sql("INSERT INTO t VALUES (42)")
    async with open_runtime() as rt:
        rows = (await (await rt.thread("keep")).state.storage.sql("SELECT a FROM t")).rows
    assert rows == [{"a": 42}]
    conn = sqlite3.connect(db_path)
    try:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    finally:
        conn.close()
    assert "t" not in names


async def test_storage_failures_in_a_tool_are_error_results(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    async def query(state: ThreadState) -> ToolResult:
        await state.storage.sql("CREATE TABLE IF NOT EXISTS seen (n)")
        await state.storage.sql("INSERT INTO seen VALUES (1)")
        found = await state.storage.sql("SELECT count(*) AS n FROM seen")
        await state.storage.sql("ATTACH DATABASE 'x.db' AS x")
        return ToolResult.success(found.rows)

    tool = define_tool(description="q", execute=query, name="q")
    async with open_runtime(tools=[tool]) as rt:
        thread = await rt.thread()
        (result,) = await thread.execute_tool_calls(
            [{"type": "tool_use", "id": "1", "name": "q", "input": {}}]
        )
        assert result.status == "error"
        assert result.error is not None and result.error.startswith("StorageError: ")
        rows = (await thread.state.storage.sql("SELECT n FROM seen")).rows
    assert rows == [{"n": 1}]


async def test_more_threads_than_open_databases_keep_their_data_under_concurrency(
    rt: runtime.Runtime,
) -> None:
    import anyio

    from quickjail.runtime._storage import MAX_OPEN_DATABASES

    states = [(await rt.thread(f"t{i}")).state for i in range(MAX_OPEN_DATABASES + 4)]

    async def use(i: int, state: ThreadState) -> None:
        await state.storage.sql("CREATE TABLE IF NOT EXISTS mine (n)")
        for _ in range(3):
            await state.storage.sql("INSERT INTO mine VALUES (?)", [i])

    async with anyio.create_task_group() as tg:
        for i, state in enumerate(states):
            tg.start_soon(use, i, state)
            tg.start_soon(use, i, state)
    for i, state in enumerate(states):
        found = await state.storage.sql(
            "SELECT count(*) AS n, min(n) AS lo, max(n) AS hi FROM mine"
        )
        assert found.rows == [{"n": 6, "lo": i, "hi": i}]


async def test_storage_after_the_runtime_closed_raises(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    from quickjail.runtime.errors import RuntimeClosedError

    async with open_runtime() as rt:
        state = (await rt.thread()).state
        await state.storage.sql("CREATE TABLE t (a)")
    with pytest.raises(RuntimeClosedError):
        await state.storage.sql("SELECT * FROM t")


def _instr_attack(chars: int) -> str:
    """The issue's shape: ``instr`` over long strings built with ``zeroblob``, one C call
    whose work is quadratic in its arguments (no SQLite hook runs inside it)."""
    return f"SELECT instr(hex(zeroblob({chars // 2}))||'x', hex(zeroblob({chars // 4}))||'y') AS n"


async def test_one_sql_function_call_cannot_outlive_the_statement_bound(
    rt: runtime.Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the progress handler never ran inside instr(): this one call ran to its end (~10 s
    # here at 1.2 M characters, 23 s in the issue) past any bound (issue 28, item 7)
    import anyio

    from quickjail.runtime import _storage

    monkeypatch.setattr(_storage, "MAX_SECONDS", 1.0)
    state = (await rt.thread()).state
    pool = state._core.store.storage
    attack = _instr_attack(1_200_000)
    assert len(attack) <= 109
    with anyio.fail_after(120):  # a safety net only: the bound is the host's kill
        with pytest.raises(StorageError, match="statement stopped: it ran longer than 1 s"):
            await state.storage.sql(attack)
        assert pool.stopped == 1  # a host fact: the statement's process was killed
        assert (await state.storage.sql("SELECT 1 AS one")).rows == [{"one": 1}]


async def test_a_cancelled_sql_call_stops_its_statement(rt: runtime.Runtime) -> None:
    import anyio

    state = (await rt.thread()).state
    pool = state._core.store.storage
    await state.storage.sql("CREATE TABLE t (a)")
    with anyio.fail_after(120):  # before: cancelling waited for the whole call (minutes)
        async with anyio.create_task_group() as tg:
            tg.start_soon(state.storage.sql, _instr_attack(4_000_000))  # minutes of one call
            for _ in range(1000):  # cancel once the statement runs (a worker starts in ms)
                if getattr(pool, "_running", None) is not None:
                    break
                await anyio.sleep(0.01)
            tg.cancel_scope.cancel()
        await state.storage.sql("INSERT INTO t VALUES (1)")  # waits for the stop, then runs
        assert pool.stopped == 1
        assert (await state.storage.sql("SELECT a FROM t")).rows == [{"a": 1}]
