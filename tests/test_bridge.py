"""Host capabilities through run_code: imports, globals, host functions, quotas, ReadOnlyDir."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import anyio
import anyio.lowlevel
import pydantic
import pytest

from quickjail import bridge
from quickjail.bridge import run_code, run_code_sync

pytestmark = pytest.mark.timeout(60)


def test_imports_make_a_bare_specifier_module_with_named_and_default_exports() -> None:
    def greet(name: str) -> str:
        return f"hi {name}"

    src = """import { greet, VERSION } from "tools"; import tools from "tools";
      export default [await greet("ada"), VERSION, Object.isFrozen(tools), typeof tools.greet]"""
    r = run_code_sync(src, imports={"tools": {"greet": greet, "VERSION": "1.2"}})
    assert r.result == ["hi ada", "1.2", True, "function"]


def test_globals_make_free_identifiers_and_namespaces_are_frozen() -> None:
    src = """ "use strict";
      let threw = false; try { cfg.limit = 1 } catch { threw = true }
      export default [LIMIT, await lookup(2), cfg.nested.deep, threw, typeof cfg.fn]"""
    r = run_code_sync(
        src,
        globals={
            "LIMIT": 10,
            "lookup": lambda k: k * 10,
            "cfg": {"limit": 5, "nested": {"deep": [1, 2]}, "fn": lambda: 1},
        },
    )
    assert r.status == "success", r.error
    assert r.result == [10, 20, [1, 2], True, "function"]


def test_an_undeclared_bare_specifier_is_a_link_error() -> None:
    r = run_code_sync('import { x } from "fs"; export default x', imports={"other": {}})
    assert r.status == "link_error" and r.error is not None and "'fs'" in r.error.message


def test_a_missing_export_of_a_host_module_is_a_link_error() -> None:
    r = run_code_sync(
        'import { nope } from "tools"; export default nope', imports={"tools": {"yes": 1}}
    )
    assert r.status == "link_error" and r.error is not None and "nope" in r.error.message


def test_a_sync_host_function_returns_a_promise_of_its_value() -> None:
    r = run_code_sync("export default (await add(2, 3)) * 2", globals={"add": lambda a, b: a + b})
    assert r.result == 10
    assert r.metrics.host_calls == 1


def test_a_synchronous_host_function_returns_its_value_directly() -> None:
    add = bridge.synchronous(lambda a, b: a + b)
    r = run_code_sync("export default add(2, 3) * 2", globals={"add": add})
    assert r.result == 10
    assert r.metrics.host_calls == 1


@pytest.mark.anyio
async def test_an_async_host_function_returns_a_promise() -> None:
    async def fetch_user(uid: int) -> dict[str, object]:
        await anyio.sleep(0.01)
        return {"id": uid, "name": f"user{uid}"}

    src = """const p = fetchUser(7); export default [p instanceof Promise, await p]"""
    r = await run_code(src, globals={"fetchUser": fetch_user})
    assert r.result == [True, {"id": 7, "name": "user7"}]


@pytest.mark.anyio
async def test_promise_all_of_twenty_sleeping_host_calls_runs_them_concurrently() -> None:
    active, most = 0, 0
    everyone_in = anyio.Event()

    async def slow(i: int) -> int:
        nonlocal active, most
        active += 1
        most = max(most, active)
        if active == 20:
            everyone_in.set()
        with anyio.fail_after(60):  # sequential calls would never all be in at once
            await everyone_in.wait()
        active -= 1
        return i * i

    r = await run_code(
        "export default await Promise.all(Array.from({length: 20}, (_, i) => slow(i)))",
        globals={"slow": slow},
    )
    assert r.result == [i * i for i in range(20)]
    assert most == 20


def test_async_host_functions_work_from_the_sync_api() -> None:
    async def twice(x: int) -> int:
        await anyio.lowlevel.checkpoint()
        return 2 * x

    assert run_code_sync("export default await twice(21)", globals={"twice": twice}).result == 42


def test_a_host_exception_shows_a_safe_message_in_js_and_the_original_on_the_host() -> None:
    secret = "/home/alice/.ssh/id_rsa"

    def leaky() -> None:
        raise FileNotFoundError(secret)

    r = run_code_sync(
        "try { await leaky() } catch (e) { report([e.name, e.message, String(e.stack)]) }"
        " export default 1",
        globals={"leaky": leaky},
    )
    assert r.status == "success"
    name, message, stack = r.reports[0]  # type: ignore[misc]
    assert name == "Error" and "leaky" in message and "FileNotFoundError" in message
    assert secret not in message and secret not in stack
    assert isinstance(r.host_errors[0], FileNotFoundError)


def test_a_host_error_raised_on_purpose_shows_its_message() -> None:
    def check(n: int) -> int:
        if n < 0:
            raise bridge.HostError("n must be positive", js_name="RangeError")
        return n

    src = "try { await check(-1) } catch (e) { report([e instanceof RangeError, e.message]) }"
    assert run_code_sync(src, globals={"check": check}).reports == [[True, "n must be positive"]]


@pytest.mark.anyio
async def test_an_async_host_exception_rejects_the_promise() -> None:
    async def boom() -> None:
        raise ValueError("internal detail")

    src = "export default await boom().then(() => 'ok', (e) => [e.name, e.message])"
    r = await run_code(src, globals={"boom": boom})
    assert r.result[0] == "Error" and "internal detail" not in r.result[1]  # type: ignore[index]


def test_typed_arguments_are_validated_before_the_call() -> None:
    calls: list[tuple[int, str]] = []

    def repeat(count: int, text: str) -> str:
        calls.append((count, text))
        return text * count

    src = """const out = [await repeat(2, "ab")];
      try { await repeat("many", "x") } catch (e) { out.push(e.name, e.message) }
      try { await repeat(1) } catch (e) { out.push(e.name) }
      export default out"""
    r = run_code_sync(src, globals={"repeat": repeat})
    assert r.status == "success", r.error
    assert r.result[:3] == ["abab", "TypeError", r.result[2]]  # type: ignore[index]
    assert "count" in r.result[2] and r.result[3] == "TypeError"  # type: ignore[index]
    assert calls == [(2, "ab")]


class Query(pydantic.BaseModel):
    table: str
    limit: int = 10


def test_a_single_model_parameter_takes_keyword_style_calls() -> None:
    seen: list[Query] = []

    def select(q: Query) -> list[int]:
        seen.append(q)
        return list(range(q.limit))

    src = """const ok = await select({table: "users", limit: 3});
      let err; try { await select({table: 5}) } catch (e) { err = e.name }
      export default [ok, err]"""
    r = run_code_sync(src, globals={"select": select})
    assert r.result == [[0, 1, 2], "TypeError"]
    assert seen == [Query(table="users", limit=3)]


def test_untyped_functions_still_get_their_argument_count_checked() -> None:
    def two(a, b):  # type: ignore[no-untyped-def]
        return [a, b]

    src = """let e; try { await two(1) } catch (x) { e = x.name }
      export default [await two(1, 'x'), await two(1, 2, 3), e]"""
    assert run_code_sync(src, globals={"two": two}).result == [[1, "x"], [1, 2], "TypeError"]


def test_the_host_call_quota_is_a_catchable_error_counted_in_metrics() -> None:
    src = """let n = 0, err;
      try { for (;;) { await ping(); n++ } } catch (e) { err = e.name }
      export default [n, err]"""
    r = run_code_sync(src, globals={"ping": lambda: None})
    assert r.result == [10_000, "RangeError"]
    assert r.metrics.quota_refusals == 1
    # the quota is per run: a new run starts from zero
    assert run_code_sync("ping(); export default 1", globals={"ping": lambda: None}).ok


@pytest.mark.anyio
async def test_pending_host_calls_are_cancelled_when_the_run_ends() -> None:
    finished: list[str] = []
    cancelled: list[str] = []

    async def forever() -> None:
        try:
            await anyio.sleep(30)
            finished.append("x")
        except anyio.get_cancelled_exc_class():
            cancelled.append("x")
            raise

    async def quick() -> str:
        await anyio.sleep(0.05)
        return "done"

    r = await run_code(
        "export default await Promise.race([forever(), quick()])",
        globals={"forever": forever, "quick": quick},
    )
    assert r.result == "done"
    assert cancelled == ["x"] and finished == []


@pytest.mark.anyio
async def test_a_host_call_cannot_reenter_the_guest_or_corrupt_another_run() -> None:
    async def inner() -> object:
        r = await run_code("export default 'inner'")
        return r.result

    r = await run_code("export default await inner()", globals={"inner": inner})
    assert r.result == "inner"


# ---------------------------------------------------------------- ReadOnlyDir through JS


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "notes.txt").write_text("hello notes")
    (root / "sub" / "data.bin").write_bytes(b"\x00\x01\x02")
    (tmp_path / "secret.txt").write_text("TOP SECRET")
    os.symlink(tmp_path / "secret.txt", root / "link.txt")
    os.mkfifo(root / "pipe")
    return root


def test_readonlydir_reads_text_bytes_lists_and_stats(tree: Path) -> None:
    src = """import { readFile, readdir, stat } from "fs";
      export default [await readFile("notes.txt", "utf8"), await readFile("sub/data.bin"),
                      await readdir("."), (await stat("sub")).type]"""
    r = run_code_sync(src, imports={"fs": bridge.ReadOnlyDir(tree)})
    assert r.status == "success", r.error
    assert r.result == [
        "hello notes",
        b"\x00\x01\x02",
        ["link.txt", "notes.txt", "pipe", "sub"],
        "directory",
    ]


@pytest.mark.parametrize(
    "path",
    [
        "../secret.txt",
        "/etc/passwd",
        "notes.txt\0x",
        "sub\\data.bin",
        "a" * 5000,
        "link.txt",
        "pipe",
        "sub",
        "%2e%2e/secret.txt",
        "sub/../../secret.txt",
    ],
    ids=[
        "dotdot",
        "absolute",
        "nul",
        "backslash",
        "too-long",
        "symlink",
        "fifo",
        "directory",
        "percent",
        "nested-dotdot",
    ],
)
def test_readonlydir_refusals_reach_js_with_only_the_virtual_path(tree: Path, path: str) -> None:
    src = """import { readFile } from "fs";
      export default async function (p) {
        try { await readFile(p); return "read!" } catch (e) { return [e.name, e.message] } }"""
    r = run_code_sync(
        src, imports={"fs": bridge.ReadOnlyDir(tree)}, execute={"args": [path]}, timeout=10
    )
    assert r.status == "success", r.error
    assert r.result != "read!"
    _name, message = r.result  # type: ignore[misc]
    assert str(tree) not in message and "TOP SECRET" not in message


def _no_dotdot(path: str) -> str:
    if ".." in path.split("/"):
        raise ValueError("policy: paths stay under /srv/private/data")
    return path


def _refuse_on_purpose(value: int) -> int:
    if value == 13:
        raise bridge.HostError("13 is not allowed here", js_name="RangeError")
    return value


SafePath = Annotated[str, pydantic.AfterValidator(_no_dotdot)]


def test_annotated_constraints_and_validators_are_enforced_before_the_call() -> None:
    calls: list[tuple[str, int, str]] = []

    def read(
        path: SafePath,
        count: Annotated[int, pydantic.Field(ge=0, le=10)],
        tag: Annotated[str, pydantic.StringConstraints(max_length=3)] = "t",
    ) -> str:
        calls.append((path, count, tag))
        return path

    src = """const out = [await read("a/b", 1, "ok")];
      for (const args of [["../etc/passwd", 1], ["a", -1], ["a", 11], ["a", 1, "long"]]) {
        try { await read(...args); out.push("called") } catch (e) { out.push([e.name, e.message]) }
      }
      export default out"""
    r = run_code_sync(src, globals={"read": read}, timeout=30)
    assert r.status == "success", r.error
    assert r.result[0] == "a/b"  # type: ignore[index]
    refusals = r.result[1:]  # type: ignore[index]
    assert [name for name, _ in refusals] == ["TypeError"] * 4, refusals
    assert ["path" in refusals[0][1], "count" in refusals[1][1], "count" in refusals[2][1]] == [
        True,
        True,
        True,
    ]
    assert "tag" in refusals[3][1]
    assert calls == [("a/b", 1, "ok")]


class Request(pydantic.BaseModel):
    path: str

    @pydantic.field_validator("path")
    @classmethod
    def _policy(cls, value: str) -> str:
        return _no_dotdot(value)


def test_a_validators_own_message_is_never_shown_to_the_program() -> None:
    def read(path: SafePath, n: Annotated[int, pydantic.AfterValidator(_refuse_on_purpose)]) -> str:
        return path

    def open_request(request: Request) -> str:
        return request.path

    src = """const out = [];
      for (const args of [["../x", 1], ["a", 13]]) {
        try { await read(...args) } catch (e) { out.push([e.name, e.message]) }
      }
      try { await open_request({ path: "a/../b" }) } catch (e) { out.push([e.name, e.message]) }
      export default out"""
    r = run_code_sync(src, globals={"read": read, "open_request": open_request}, timeout=30)
    assert r.status == "success", r.error
    (name, message), on_purpose, (model_name, model_message) = r.result  # type: ignore[misc]
    assert name == "TypeError" and "path" in message and "value_error" in message
    assert model_name == "TypeError" and "request.path" in model_message
    for shown in (message, model_message):
        assert "/srv/private" not in shown and "policy" not in shown
    assert on_purpose == ["RangeError", "13 is not allowed here"]  # a HostError is meant to show


def test_star_args_annotations_check_every_extra_argument() -> None:
    def total(first: int, *rest: Annotated[int, pydantic.Field(ge=0)]) -> int:
        return first + sum(rest)

    src = """const out = [await total(1, 2, 3)];
      for (const args of [[1, 2, "x"], [1, -5]]) {
        try { await total(...args); out.push("called") } catch (e) { out.push([e.name, e.message]) }
      }
      export default out"""
    r = run_code_sync(src, globals={"total": total}, timeout=30)
    assert r.status == "success", r.error
    first, bad_type, negative = r.result  # type: ignore[misc]
    assert first == 6
    assert bad_type[0] == "TypeError" and "rest[1]" in bad_type[1]
    assert negative[0] == "TypeError" and "rest[0]" in negative[1]


def test_an_unresolvable_type_hint_fails_when_the_run_is_built() -> None:
    def lookup(key: str, limit: NoSuchType) -> str:  # type: ignore[name-defined]  # noqa: F821
        return key

    with pytest.raises(TypeError, match=r"lookup\(\).*'limit'.*NoSuchType"):
        run_code("export default 1", globals={"lookup": lookup})
    with pytest.raises(TypeError, match=r"db\.lookup\(\).*'limit'"):
        run_code_sync("export default 1", imports={"db": {"lookup": lookup}})
