"""A worker reads a repeated program's ``start`` head once (``_wire.StartHeads``): a program
run again on the same worker still gets its own arguments, globals, options and limits, and
many different programs in turn each run as themselves."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from quickjail import bridge
from quickjail.executors import ProcessPool
from quickjail.executors._wire import StartHeads
from quickjail.sandbox import OutputLimits

ECHO = "export function echo(...args: unknown[]) { return [args, globalThis.g ?? null]; }"


@pytest.fixture(scope="module")
def pool() -> Iterator[ProcessPool]:
    with ProcessPool(workers=1) as p:  # one worker: every run below meets the same heads
        yield p


def test_a_repeated_program_gets_its_own_arguments_and_globals(pool: ProcessPool) -> None:
    for i in range(5):
        r = bridge.run_code_sync(
            ECHO, execute={"fn": "echo", "args": [i, str(i)]}, globals={"g": i * 10}, executor=pool
        )
        assert r.status == "success" and r.result == [[i, str(i)], i * 10]


def test_a_repeated_program_gets_its_own_limits_and_options(pool: ProcessPool) -> None:
    src = "for (let i = 0; i < 5; i++) console.log(i); export default 1;"
    for max_logs in (1, 5, 2, 5):
        r = bridge.run_code_sync(src, output_limits=OutputLimits(max_logs=max_logs), executor=pool)
        assert r.status == "success"
        assert [e.args for e in r.logs if e.level == "log"] == [[i] for i in range(max_logs)]
    spin = "while (true) {}"
    assert bridge.run_code_sync(spin, timeout=0.05, executor=pool).reason == "timeout"
    assert bridge.run_code_sync(spin, fuel=10_000, executor=pool).reason == "fuel"


def test_more_programs_than_the_worker_keeps_heads_for_each_run_as_themselves(
    pool: ProcessPool,
) -> None:
    n = StartHeads.MAX_ENTRIES + 8
    for round_ in range(2):
        for i in range(n):
            r = bridge.run_code_sync(f"export default {i} + {round_};", executor=pool)
            assert r.result == i + round_
