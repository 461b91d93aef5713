"""Outcomes the guest decides: status ``memory`` from facts only, never from what the program
threw."""

from __future__ import annotations

import pytest

from quickjail.bridge import run_code_sync

pytestmark = pytest.mark.timeout(120)

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
