"""Parent and child threads: persisted links, env inheritance, scoped blocking, attachments."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from quickjail import runtime
from quickjail.runtime import (
    AttachmentRef,
    ThreadState,
    ToolAttachment,
    ToolResult,
    Variable,
    define_tool,
)
from quickjail.runtime._runtime import MAX_THREAD_DEPTH
from quickjail.runtime._store import MIGRATIONS
from quickjail.runtime.errors import (
    MissingVariablesError,
    ThreadFileNotFoundError,
    ThreadPathError,
)

pytestmark = pytest.mark.anyio


async def _read_db(state: ThreadState) -> ToolResult:
    return ToolResult.success(await state.env("DB_PASSWORD"))


#: A sub-agent's tool: declares DB_PASSWORD scoped, so a thread using it does not inherit it.
SUB_TOOL = define_tool(
    description="reads its own DB password",
    execute=_read_db,
    name="sub_db",
    variables=[Variable("DB_PASSWORD", scoped=True, type="secret")],
)


async def test_a_child_inherits_its_parents_variables_and_overrides_them(
    rt: runtime.Runtime,
) -> None:
    parent = await rt.thread("p", env={"REGION": "eu", "MODE": "fast"})
    child = await parent.child("c", env={"MODE": "safe"})
    grandchild = await child.child()
    assert child.parent_id == "p" and child.state.parent_id == "p"
    assert grandchild.parent_id == "c" and parent.parent_id is None
    assert [await child.state.env(n) for n in ("REGION", "MODE")] == ["eu", "safe"]
    assert [await grandchild.state.env(n) for n in ("REGION", "MODE")] == ["eu", "safe"]
    assert await parent.state.env("MODE") == "fast"  # a child never writes up
    await parent.state.set_env("LATE", "seen live")
    assert await grandchild.state.env("LATE") == "seen live"


async def test_the_parent_link_is_persisted_and_cannot_be_changed(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    async with open_runtime() as rt:
        parent = await rt.thread("p", env={"REGION": "eu"})
        await rt.thread("other")
        await rt.thread("c", parent=parent)
    async with open_runtime() as rt:
        child = await rt.thread("c")
        assert child.parent_id == "p"
        assert await child.state.env("REGION") == "eu"
        assert (await rt.thread("c", parent="p")).parent_id == "p"
        with pytest.raises(ValueError, match="exists with parent 'p', not 'other'"):
            await rt.thread("c", parent="other")
        with pytest.raises(ValueError, match="parent thread 'nope' does not exist"):
            await rt.thread("new", parent="nope")
        with pytest.raises(ValueError, match="its own parent"):
            await rt.thread("self", parent="self")


async def test_children_nest_at_most_max_thread_depth(rt: runtime.Runtime) -> None:
    thread = await rt.thread()
    for _ in range(MAX_THREAD_DEPTH - 1):
        thread = await thread.child()
    with pytest.raises(ValueError, match=f"at most {MAX_THREAD_DEPTH} deep"):
        await thread.child()


async def test_scoped_variable_is_not_inherited_by_the_thread_declaring_it_but_flows_below(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    async with open_runtime() as rt:
        parent = await rt.thread("p", env={"REGION": "eu"})
        await parent.state.set_env("DB_PASSWORD", "parent-password", type="secret")
        # the parent's tools do not declare DB_PASSWORD: a child with the same tools inherits
        assert await (await parent.child()).state.env("DB_PASSWORD") == "parent-password"
        # a sub-agent whose tools declare it scoped does not inherit it: it brings its own
        sub = await parent.child("sub", tools=[SUB_TOOL])
        assert await sub.state.env("DB_PASSWORD") is None
        assert await sub.state.env("REGION") == "eu"  # other variables still flow
        (result,) = await sub.execute_tool_calls(
            [{"type": "tool_use", "id": "1", "name": "sub_db", "input": {}}]
        )
        assert result.status == "success" and result.result is None
        await sub.state.set_env("DB_PASSWORD", "sub-password")
        below = await sub.child("below")  # keeps the sub-agent's tools
        assert await below.state.env("DB_PASSWORD") == "sub-password"
        assert await parent.state.env("DB_PASSWORD") == "parent-password"
    async with open_runtime() as rt:  # the declaration is stored with the thread
        below = await rt.thread("below", tools=[])
        assert await below.state.env("DB_PASSWORD") == "sub-password"
        fresh = await rt.thread(parent="p", tools=[SUB_TOOL])
        assert await fresh.state.env("DB_PASSWORD") is None


async def test_a_child_missing_a_required_scoped_variable_is_refused_listing_it(
    rt: runtime.Runtime,
) -> None:
    needs = define_tool(
        description="x",
        execute=_read_db,
        name="needs_db",
        variables=[Variable("DB_PASSWORD", scoped=True, required=True, description="own DB")],
    )
    parent = await rt.thread(env={"DB_PASSWORD": "parent's"})
    with pytest.raises(MissingVariablesError) as caught:
        await parent.child(tools=[needs])
    assert caught.value.missing == [("DB_PASSWORD", "needs_db", "own DB")]
    child = await parent.child(tools=[needs], env={"DB_PASSWORD": "child's"})
    (result,) = await child.execute_tool_calls(
        [{"type": "tool_use", "id": "1", "name": "needs_db", "input": {}}]
    )
    assert result.result == "child's"


async def test_inherited_secrets_decrypt_in_the_child_and_are_redacted_there(
    rt: runtime.Runtime,
) -> None:
    secret = "inherited-secret-0123456789"
    parent = await rt.thread()
    await parent.state.set_env("TOKEN", secret, type="secret")

    async def leak(state: ThreadState) -> ToolResult:
        return ToolResult.success(f"token={await state.env('TOKEN')}")

    tool = define_tool(description="leak", execute=leak, name="leak")
    child = await parent.child(tools=[tool])
    assert await child.state.env("TOKEN") == secret
    (result,) = await child.execute_tool_calls(
        [{"type": "tool_use", "id": "1", "name": "leak", "input": {}}]
    )
    assert result.result == "token=[REDACTED]"


async def test_attachments_are_copied_into_the_receiving_thread_with_rewritten_paths(
    rt: runtime.Runtime,
) -> None:
    async def draw(state: ThreadState) -> ToolResult:
        return ToolResult(
            status="success",
            attachments=[ToolAttachment.from_bytes("chart.png", "image/png", b"\x89PNG-1")],
        )

    tool = define_tool(description="draw", execute=draw, name="draw")
    parent = await rt.thread(tools=[tool])
    child = await parent.child()
    await child.state.write_file("/attachments/chart.png", b"already here")
    (result,) = await parent.execute_tool_calls(
        [{"type": "tool_use", "id": "1", "name": "draw", "input": {}}]
    )
    (ref,) = result.attachments
    assert isinstance(ref, AttachmentRef)
    (copy,) = await parent.copy_attachments([ref], to=child)
    assert copy.path == "/attachments/chart-1.png" and copy.name == "chart-1.png"
    assert copy.id != ref.id and (copy.size, copy.mime_type) == (ref.size, "image/png")
    assert await child.state.read_file(copy.path) == b"\x89PNG-1"
    assert await child.state.read_file("/attachments/chart.png") == b"already here"
    assert await parent.state.list_files() == ["/attachments/chart.png"]
    back = await child.copy_attachments([copy], to=parent)  # works the other way too
    assert back[0].path == "/attachments/chart-1.png"


async def test_copying_a_reference_to_a_missing_traversing_or_resized_file_is_refused(
    rt: runtime.Runtime,
) -> None:
    a, b = await rt.thread(), await rt.thread()
    await a.state.write_file("/attachments/x.txt", "12345")
    ok = AttachmentRef(
        id="att_1", path="/attachments/x.txt", name="x.txt", mime_type="text/plain", size=5
    )
    with pytest.raises(ThreadFileNotFoundError):
        await a.copy_attachments([ok.model_copy(update={"size": 4})], to=b)
    with pytest.raises(ThreadFileNotFoundError):
        await b.copy_attachments([ok], to=a)  # b has no such file
    with pytest.raises(ThreadPathError):
        await a.copy_attachments([ok.model_copy(update={"path": "../../etc/passwd"})], to=b)
    with pytest.raises(TypeError):
        await a.copy_attachments(["/attachments/x.txt"], to=b)  # type: ignore[list-item]
    assert await b.state.list_files() == []  # all or nothing


def _write_v1_database(path: Path) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    MIGRATIONS[0](conn)
    conn.execute("PRAGMA user_version = 1")
    conn.execute("INSERT INTO threads (id, created_at, turn_count) VALUES ('old', 0, 3)")
    conn.execute(
        "INSERT INTO variables (thread_id, name, type, value, updated_at) "
        "VALUES ('old', 'REGION', 'text', CAST('eu' AS BLOB), 0)"
    )
    conn.close()


async def test_a_database_of_the_previous_schema_opens_migrated_with_its_threads(
    open_runtime: Callable[..., runtime.Runtime], db_path: Path
) -> None:
    _write_v1_database(db_path)
    async with open_runtime() as rt:
        old = await rt.thread("old")
        assert old.state.turn_count == 3 and old.parent_id is None
        child = await old.child()
        assert await child.state.env("REGION") == "eu"
    conn = sqlite3.connect(db_path)
    try:
        assert conn.execute("PRAGMA user_version").fetchone() == (len(MIGRATIONS),)
    finally:
        conn.close()


async def test_scoped_no_longer_hides_a_variable_from_tools_of_the_same_thread(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    async def snoop(state: ThreadState) -> ToolResult:
        return ToolResult.success(await state.env("DB_PASSWORD"))

    tools = [SUB_TOOL, define_tool(description="snoop", execute=snoop, name="snoop")]
    async with open_runtime(tools=tools, agent_env={"DB_PASSWORD": "hunter2"}) as rt:
        thread = await rt.thread()
        owner, other = await thread.execute_tool_calls(
            [
                {"type": "tool_use", "id": "1", "name": "sub_db", "input": {}},
                {"type": "tool_use", "id": "2", "name": "snoop", "input": {}},
            ]
        )
    assert owner.result == other.result == "[REDACTED]"  # declared secret by sub_db
