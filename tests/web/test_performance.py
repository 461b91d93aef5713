"""performance.now() and performance.timeOrigin count from each run's own start (W3C High
Resolution Time), never from when the snapshot was built."""

from __future__ import annotations

import time

import pytest

import quickjail

CASES: list[tuple[str, str, object]] = [
    (
        "now_never_goes_back",
        """const xs = Array.from({ length: 500 }, () => performance.now());
        return xs.every((x, i) => i === 0 || x >= xs[i - 1])""",
        True,
    ),
    (
        "now_is_coarsened_to_100_microseconds",
        """const xs = Array.from({ length: 2000 }, () => performance.now());
        return xs.every((x) => Math.abs(x * 10 - Math.round(x * 10)) < 1e-6)""",
        True,
    ),
    (
        "time_origin_is_constant_during_a_run",
        "const a = performance.timeOrigin; for (let i = 0; i < 1e4; i++);"
        " return a === performance.timeOrigin",
        True,
    ),
    (
        "to_json_has_the_time_origin",
        "return performance.toJSON().timeOrigin === performance.timeOrigin",
        True,
    ),
    (
        "the_interface_is_web_idl_shaped",
        """const out = [Object.prototype.toString.call(performance),
                     performance instanceof Performance,
                     performance instanceof EventTarget];
        for (const f of [() => new Performance(), () => Performance.prototype.now.call({})])
          try { f(); out.push("no error"); } catch (e) { out.push(e.name); }
        return out""",
        ["[object Performance]", True, True, "TypeError", "TypeError"],
    ),
]


@pytest.mark.parametrize(("body", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_performance_follows_high_resolution_time(body: str, expected: object) -> None:
    r = quickjail.run_code_sync(f"export default (() => {{ {body} }})()")
    assert r.status == "success", r.error
    assert r.result == expected


def test_now_starts_near_zero_in_every_run_and_time_origin_is_the_runs_start() -> None:
    src = "export default [performance.now(), performance.timeOrigin]"
    for _ in range(3):
        before = time.time() * 1000
        r = quickjail.run_code_sync(src, timeout=60)
        after = time.time() * 1000
        now, origin = r.result
        # the snapshot was built minutes or days ago: a clock counting from then is far above
        assert 0 <= now <= after - before
        assert before - 1 <= origin <= after + 1


def test_now_measures_the_time_a_run_spends() -> None:
    r = quickjail.run_code_sync(
        """const t0 = performance.now(), d0 = Date.now();
        while (Date.now() - d0 < 30);
        export default performance.now() - t0""",
        timeout=60,
    )
    assert r.status == "success", r.error
    assert r.result >= 29


def test_a_deterministic_run_sees_the_fixed_clock() -> None:
    src = """export default [performance.timeOrigin, performance.now(), performance.now(),
                            new Date(performance.timeOrigin).toISOString()]"""
    a = quickjail.run_code_sync(src, deterministic=True).result
    b = quickjail.run_code_sync(src, deterministic=True).result
    assert a == b
    assert a[3] == "2025-01-01T00:00:00.000Z"
    assert 0 < a[1] < a[2]
