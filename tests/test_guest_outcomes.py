"""Outcomes the guest decides: status ``memory`` from facts only, bounded error descriptions and
logs, fast refusal of values too big to send, and errors thrown by callbacks the run survives."""

from __future__ import annotations

import pytest

from quickjail.bridge import run_code_sync

pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("sync_path")]

MiB = 2**20
HOG = "try { new Uint8Array(2 ** 28) } catch {}\n"  # one caught allocation failure


@pytest.mark.parametrize(
    "thrown",
    [
        "null",
        "undefined",
        "new InternalError('out of memory')",
        "Object.assign(new Error('out of memory'), { name: 'InternalError' })",
        "{ name: 'InternalError', message: 'out of memory', uncatchable: true, oom: true }",
    ],
)
def test_after_a_caught_allocation_failure_what_the_program_throws_is_an_error(
    thrown: str,
) -> None:
    r = run_code_sync(HOG + f"throw {thrown}", language="javascript")
    assert r.status == "error", (r.status, r.error)


def test_a_setter_on_object_prototype_cannot_forge_the_error_record() -> None:
    forge = (
        "for (const k of ['uncatchable', 'oom', 'thrown']) Object.defineProperty(Object.prototype,"
        " k, { configurable: true, set(v) { Object.defineProperty(this, k,"
        " { value: true, enumerable: true }) } });\n"
    )
    r = run_code_sync(HOG + forge + "throw new Error('mine')", language="javascript")
    assert r.status == "error", (r.status, r.error)
    assert r.error is not None and r.error.message == "mine"


def test_the_allocators_own_error_is_memory_even_when_rethrown() -> None:
    r = run_code_sync("new Uint8Array(2 ** 28)", language="javascript")
    assert r.status == "memory", (r.status, r.error)
    r = run_code_sync(
        "try { new Uint8Array(2 ** 28) } catch (e) { throw e }", language="javascript"
    )
    assert r.status == "memory", (r.status, r.error)


def test_a_runaway_allocation_is_memory() -> None:
    r = run_code_sync(
        "const keep = []; for (;;) keep.push(new Array(1e4).fill(keep.length))",
        language="javascript",
        memory_limit_bytes=32 * MiB,
        timeout=60,
    )
    assert r.status == "memory", (r.status, r.error)


def test_a_huge_error_message_is_cut_in_the_guest_and_the_status_stays_error() -> None:
    """Describing the error needs memory for its start only, not for a copy of all of it."""
    r = run_code_sync(
        "const e = new Error('\\u2603'.repeat(12 * 2 ** 20)); e.name = 'N'.repeat(2 ** 20);\n"
        "throw e",
        language="javascript",
        memory_limit_bytes=64 * MiB,
    )
    assert r.status == "error", (r.status, r.error)
    assert r.error is not None
    # the guest cut both before sending (262,144 characters each, at most ~1 MiB of UTF-8 in
    # all, not 37 MiB); the host then keeps its own, smaller cap and says so
    assert r.metrics.bytes_out < 2 * MiB, r.metrics.bytes_out
    assert r.error.message.startswith("\u2603" * 8) and len(r.error.message) < 1 * MiB
    assert r.error.message.endswith(" characters]")
    assert r.error.name.startswith("NNNN") and len(r.error.name) < 1 * MiB


def test_cutting_a_logged_string_never_changes_the_programs_string() -> None:
    r = run_code_sync(
        "const s = 'a'.repeat(300000); console.log(s);\n"
        "const t = 'b'.repeat(262145); console.log(t);\n"
        "export default [s.slice(262140, 262160) === 'a'.repeat(20), t.slice(-3)]",
        language="javascript",
    )
    assert r.status == "success", r.error
    assert r.result == [True, "bbb"]
    assert [str(e.args[0]).endswith("more bytes]") for e in r.logs] == [True, True]


@pytest.mark.parametrize("length", ["2 ** 32 - 1", "2 ** 26"])
def test_a_sparse_array_too_long_to_send_is_refused_at_once(length: str) -> None:
    """The size check comes before the walk: 4 billion holes are not visited one by one."""
    src = (
        f"const a = []; a.length = {length}; let out = 'sent';\n"
        "try { report(a) } catch (e) { out = e.name + ': ' + e.message }\n"
        "console.log(a); export default out"
    )
    # a generous deadline: the refusal is immediate; before the fix this ran until it
    r = run_code_sync(src, language="javascript", timeout=30)
    assert r.status == "success", (r.status, r.reason, r.error)
    assert isinstance(r.result, str) and r.result.startswith("TypeError"), r.result
    assert "size cap" in r.result
    assert r.logs and "[Array too long]" in r.logs[0].args


@pytest.mark.parametrize(
    "setup",
    [
        "queueMicrotask(() => { throw new Error('from a microtask') });",
        "const r = new FinalizationRegistry(() => { throw new Error('from a registry') });\n"
        "(() => { r.register({}, 'held') })();",
    ],
)
def test_an_error_thrown_by_a_callback_is_logged_and_the_run_carries_on(setup: str) -> None:
    src = setup + "\nfor (let i = 0; i < 5; i++) await null;\nexport default 'done'"
    r = run_code_sync(src, language="javascript")
    assert r.status == "success", (r.status, r.error)
    assert r.result == "done"
    errors = [e for e in r.logs if e.level == "error"]
    assert len(errors) == 1, r.logs
    assert errors[0].args[0] == "Uncaught exception in a callback:"
    assert "Error: from a" in str(errors[0].args[1])


def test_json_stringify_refuses_values_nested_deeper_than_4096_levels() -> None:
    """Our patch 0002: a RangeError in bounded time, where a deep value took quadratic time and
    then trapped on the native stack."""
    src = (
        "const nest = (n) => { let o = []; for (let i = 1; i < n; i++) o = [o]; return o };\n"
        "let deep = 'none'; try { JSON.stringify(nest(1e5)) } catch (e) { deep = e.name }\n"
        "export default [JSON.stringify(nest(4096)).length, deep]"
    )
    r = run_code_sync(src, language="javascript", timeout=60)
    assert r.status == "success", (r.status, r.reason, r.error)
    assert r.result == [2 * 4096, "RangeError"]
