"""A log never fails on what it cannot read: a getter that throws is described where it sits,
and the rest of the value is logged; what must go on (memory, a stopped run) still does."""

from __future__ import annotations

import pytest

from quickjail import run_code_sync

pytestmark = pytest.mark.timeout(60)


def _logged(src: str) -> list[object]:
    r = run_code_sync(src + "\nexport default 'ok'")
    assert (r.status, r.result) == ("success", "ok"), r.error
    return [entry.args for entry in r.logs]


def test_a_throwing_getter_is_described_and_the_other_properties_are_logged() -> None:
    logs = _logged("console.log({ a: 1, get b() { throw new TypeError('no') }, c: [3] })")
    assert logs == [[{"a": 1, "b": "[getter threw: TypeError]", "c": [3]}]]


def test_a_throwing_array_element_getter_is_described() -> None:
    src = "const a = [1, 2]; Object.defineProperty(a, 1, { get() { throw 5 } }); console.log(a)"
    assert _logged(src) == [[[1, "[getter threw]"]]]


def test_an_error_whose_message_getter_throws_is_described() -> None:
    src = (
        "const e = new Error('m');\n"
        "Object.defineProperty(e, 'message', { get() { throw new RangeError('r') } });\n"
        "console.log('before', e, 'after')"
    )
    assert _logged(src) == [["before", "[Error whose toString threw: RangeError]", "after"]]


def test_a_thrown_object_with_a_throwing_getter_is_an_error_not_memory() -> None:
    r = run_code_sync("throw { get x() { throw new Error('boom') }, y: 2 }")
    assert r.status == "error"
    assert r.error is not None and "getter threw: Error" in r.error.message


def test_running_out_of_memory_inside_a_getter_is_not_swallowed_by_the_log() -> None:
    src = (
        "let c = 'logged';\n"
        "const o = { get a() { const k = []; for (;;) k.push(new Uint8Array(1 << 20)) } };\n"
        "try { console.log(o) } catch (e) { c = e.name }\n"
        "export default c"
    )
    r = run_code_sync(src, memory_limit_bytes=32 * 2**20)
    assert (r.status, r.result) == ("success", "InternalError"), r.error
    assert r.logs == []


def test_a_getter_that_never_returns_is_stopped_by_the_deadline() -> None:
    r = run_code_sync("console.log({ get a() { for (;;) {} } })", timeout=0.5)
    assert (r.status, r.reason) == ("terminated", "timeout")
