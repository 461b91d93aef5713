"""Transfer caps both ways: nothing larger than the 64 MiB transfer cap crosses the boundary,
whatever ``memory_limit_bytes`` allows. Into the sandbox (arguments, globals, host modules,
host function results) the API or the call refuses it with an error naming the cap; out of
it (results, reports, host function arguments) the guest is told with a catchable error and
the host never reads the bytes."""

from __future__ import annotations

from typing import Any

import pytest
from _isolation import Case, Ctx, MiB, case_id, run_any, table

from quickjail.sandbox import CodeResult
from quickjail.sandbox._values import MAX_TRANSFER_BYTES

OVER = MAX_TRANSFER_BYTES + 1
HALF = MAX_TRANSFER_BYTES // 2 + 1
BIG = 320 * MiB  # a cap large enough that only the transfer cap can refuse
CAUGHT = "let caught = 'none';\n"


def _host(ctx: Ctx) -> dict[str, Any]:
    def f(*args: Any) -> int:
        ctx.calls.append(len(args))
        return 1

    def huge_str() -> str:
        return "s" * OVER

    async def huge_async() -> bytes:
        return b"a" * OVER

    def two_halves() -> list[bytes]:
        return [b"h" * HALF, b"h" * HALF]

    return {
        "globals": {"f": f, "huge_str": huge_str, "huge_async": huge_async, "two": two_halves},
        "memory_limit_bytes": BIG,
    }


def _caught(body: str) -> str:
    return (
        CAUGHT + f"try {{ {body} }} catch (e) {{ caught = e.name + ': ' + e.message }}\n"
        "export default caught"
    )


def _names_the_cap(v: Any) -> bool:
    return isinstance(v, str) and v.startswith(("TypeError", "RangeError")) and "cap" in v


def _not_called(r: CodeResult, ctx: Ctx) -> None:
    assert ctx.calls == [], ctx.calls


def _cap_named_once_read(r: CodeResult, ctx: Ctx) -> None:
    assert r.metrics.bytes_out < 2 * MiB, r.metrics.bytes_out


CASES = [
    # into the sandbox: refused by the API before anything runs
    Case(
        "args-nested-halves",
        "export default (x) => 1",
        "refused",
        error="TransferError",
        message="transfer cap",
        memory=BIG,
        opts={"execute": {"args": [{"k": [b"x" * HALF, b"y" * HALF]}]}},
        host_bytes=2 * OVER,
    ),
    Case(
        "globals-over-cap",
        "export default typeof big",
        "refused",
        message="transfer cap",
        memory=BIG,
        opts={"globals": {"big": "g" * OVER}},
        host_bytes=2 * OVER,
    ),
    Case(
        "imports-over-cap",
        "import { big } from 'm'; export default big.length",
        "refused",
        message="transfer cap",
        memory=BIG,
        opts={"imports": {"m": {"big": b"i" * OVER}}},
        host_bytes=2 * OVER,
    ),
    # into the sandbox: a host function's result over the cap is a catchable error
    Case(
        "host-result-str-over-cap",
        _caught("await huge_str()"),
        "completes",
        result=_names_the_cap,
        opts=_host,
        host_bytes=4 * OVER,
    ),
    Case(
        "host-result-async-over-cap",
        _caught("await huge_async()"),
        "completes",
        result=_names_the_cap,
        opts=_host,
        host_bytes=4 * OVER,
    ),
    Case(
        "host-result-two-halves",
        _caught("await two()"),
        "completes",
        result=_names_the_cap,
        opts=_host,
        host_bytes=4 * OVER,
    ),
    # out of the sandbox: the guest refuses before sending; the host reads nothing
    Case(
        "guest-arg-over-cap",
        _caught("await f('x'.repeat(2 ** 26 + 1))"),
        "completes",
        result=_names_the_cap,
        opts=_host,
        check=lambda r, ctx: (_not_called(r, ctx), _cap_named_once_read(r, ctx)),
    ),
    Case(
        "guest-report-over-cap",
        _caught("report(new Uint8Array(2 ** 26 + 1))"),
        "completes",
        result=_names_the_cap,
        opts={"memory_limit_bytes": BIG},
        check=_cap_named_once_read,
    ),
    Case(
        "guest-result-over-cap",
        "export default ['x'.repeat(2 ** 25), 'y'.repeat(2 ** 25), 'z']",
        "js_error",
        opts={"memory_limit_bytes": BIG},
        check=_cap_named_once_read,
    ),
]


@pytest.mark.timeout(180)
@pytest.mark.parametrize("case", table(CASES), ids=case_id)
def test_nothing_over_the_transfer_cap_crosses_the_boundary(case: Case, ctx: Ctx) -> None:
    run_any(case, ctx)
