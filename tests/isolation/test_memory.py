"""Memory bombs under a 32 MiB cap: status ``memory`` (or the catchable error QuickJS throws
before allocating), never a host crash; guest memory stays under the cap, host RSS under the cap
plus slack (checked by the harness for every case), and the next run is unaffected."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from _isolation import Case, Ctx, MiB, case_id, run_case, table

from quickjail.bridge import run_code_sync


async def _tick() -> int:
    await anyio.sleep(0.001)
    return 1


ASYNC_HOST: dict[str, Any] = {"globals": {"tick": _tick}}
CASES = [
    # ---- arrays and objects
    Case("array-of-arrays", "const a = []; for (;;) a.push([1, 2, 3, 4]);", "memory"),
    Case("array-spread-doubling", "let a = [1]; for (;;) a = [...a, ...a];", "memory"),
    Case("array-length-fill", "export default new Array(2 ** 32 - 1).fill(0).length", "memory"),
    Case("object-many-keys", "const o = {}; for (let i = 0; ; i++) o['k' + i] = i;", "memory"),
    Case("linked-object-graph", "let o = {}; for (;;) o = { o, pad: [1, 2, 3] };", "memory"),
    Case("closure-chain", "let f = () => 0; for (;;) { const g = f; f = () => g() + 1 }", "memory"),
    Case(
        "error-objects-with-stacks",
        "const keep = []; for (;;) keep.push(new Error('x'.repeat(100)));",
        "memory",
    ),
    Case(
        "symbols", "const keep = []; for (let i = 0; ; i++) keep.push(Symbol('s' + i));", "memory"
    ),
    Case(
        "promise-chain",
        "let p = Promise.resolve(); const keep = []; for (;;) keep.push(p = p.then(() => {}));",
        "memory",
    ),
    Case(
        "weakrefs-and-registry",
        "const r = new FinalizationRegistry(() => {}); const keep = [];\n"
        "for (;;) { const o = {}; keep.push(new WeakRef(o), o); r.register(o, keep.length) }",
        "memory",
    ),
    # ---- strings
    Case("repeat-2-28", "export default 'x'.repeat(2 ** 28).length", "memory"),
    Case(
        "repeat-over-max-length",
        "export default 'x'.repeat(2 ** 30).length",
        "js_error",
        error="RangeError",
    ),
    Case(
        "doubling-concat-flattened",
        "let s = 'x'; for (;;) { s = s + s; s.charCodeAt(s.length - 1) }",
        "memory",
    ),
    Case(
        "concat-with-slice-flattening",
        "let s = 'ab'; for (let i = 0; ; i++) { s = s + s + i; s = s.slice(1); s.indexOf('zz') }",
        "memory",
    ),
    Case(
        "many-distinct-strings",
        "const keep = []; for (let i = 0; ; i++) keep.push('x'.repeat(1000) + i);",
        "memory",
    ),
    Case("padend-2-29", "export default ''.padEnd(2 ** 29, 'ab').length", "memory"),
    # ---- binary data
    Case("uint8array-2-30", "export default new Uint8Array(2 ** 30).length", "memory"),
    Case("arraybuffer-2-31", "export default new ArrayBuffer(2 ** 31 - 1).byteLength", "memory"),
    Case(
        "many-megabyte-typed-arrays",
        "const keep = []; for (;;) keep.push(new Uint8Array(1 << 20));",
        "memory",
    ),
    Case(
        "resizable-arraybuffer-grow",
        "const b = new ArrayBuffer(1, { maxByteLength: 2 ** 30 });\n"
        "for (let n = 1 << 20; ; n *= 2) b.resize(n);",
        "memory",
    ),
    # ---- collections
    Case("map-growth", "const m = new Map(); for (let i = 0; ; i++) m.set(i, { i });", "memory"),
    Case("set-growth", "const s = new Set(); for (let i = 0; ; i++) s.add('k' + i);", "memory"),
    # ---- regex and JSON
    Case(
        "regex-huge-alternation",
        "const alt = Array.from({ length: 1e6 }, (_, i) => 'w' + i).join('|');\n"
        "export default new RegExp(alt).test('zz')",
        "memory",
    ),
    Case(
        "json-parse-huge-array",
        "export default JSON.parse('[' + '1,'.repeat(2 ** 23) + '1]').length",
        "memory",
    ),
    Case(
        "json-stringify-grows-past-cap",
        "const a = new Array(1e5).fill('x'.repeat(300)); export default JSON.stringify(a).length",
        "memory",
    ),
    Case("bigint-squaring", "let x = 3n; for (;;) x = x * x;", "js_error", error="RangeError"),
    # ---- catching, and what cannot be faked
    Case(
        "single-oversize-allocation-is-catchable",
        "let c = 'no'; try { new Uint8Array(2 ** 28) } catch (e) { c = e.name }\nexport default c",
        "completes",
        result="InternalError",
    ),
    Case(
        "caught-oom-after-megabyte-chunks-program-continues",
        "let keep = [], c = 'no';\n"
        "try { for (;;) keep.push(new Uint8Array(1 << 20)) }\n"
        "catch (e) { keep = null; c = 'caught' }\n"
        "export default c",
        "completes",
        result="caught",
    ),
    Case(
        "caught-oom-after-small-objects-program-continues",
        "let keep = [], c = 'no';\n"
        "try { for (;;) keep.push({ a: keep.length }) } catch (e) { keep = null; c = 'caught' }\n"
        "export default c",
        "completes",
        result="caught",
    ),
    Case(
        "caught-oom-after-strings-program-continues",
        "let keep = [], c = 'no';\n"
        "try { for (;;) keep.push('x'.repeat(1 << 16) + keep.length) }\n"
        "catch (e) { keep = null; c = 'caught' }\n"
        "export default c",
        "completes",
        result="caught",
    ),
    Case(
        "script-thrown-oom-text-is-not-memory",
        "throw new InternalError('out of memory')",
        "js_error",
        error="InternalError",
    ),
    Case(
        "caught-oom-then-own-internal-error-is-not-memory",
        "try { new Uint8Array(2 ** 28) } catch {}\n"
        "throw new InternalError('a failure of my own, not memory')",
        "js_error",
        error="InternalError",
    ),
    Case(
        "caught-oom-then-type-error-is-error",
        "try { new Uint8Array(2 ** 28) } catch {}\nthrow new TypeError('mine')",
        "js_error",
        error="TypeError",
    ),
    # ---- around async host calls, and bigger caps
    Case(
        "bomb-after-async-host-call",
        "await tick(); const a = []; for (;;) a.push([a.length]);",
        "memory",
        opts=ASYNC_HOST,
    ),
    Case(
        "bomb-inside-async-entry",
        "export default async function () { await tick(); let s = 'x';"
        " for (;;) { s += s; s.charCodeAt(0) } }",
        "memory",
        opts=ASYNC_HOST,
    ),
    Case(
        "runaway-under-128-mib-cap",
        "const keep = []; for (;;) keep.push(new Array(1e4).fill(keep.length));",
        "memory",
        memory=128 * MiB,
        timeout=5,
    ),
    Case(
        "join-of-sparse-array",
        "export default new Array(1e8).join('abc').length",
        "memory",
        # join walked every remaining hole after its string failed to grow (our patch 0004)
        exact_deadline=True,
    ),
    Case(
        "join-of-sparse-array-max-length",
        "export default new Array(2 ** 32 - 1).join('abc').length",
        "memory",
        exact_deadline=True,
    ),
]


def _next_run_is_clean() -> None:
    r = run_code_sync(
        "export default [1, 2, 3].map((x) => x * 2)",
        language="javascript",
        memory_limit_bytes=32 * MiB,
        timeout=2,
    )
    assert r.status == "success" and r.result == [2, 4, 6], r


@pytest.mark.timeout(180)
@pytest.mark.parametrize("case", table(CASES), ids=case_id)
def test_memory_bomb_is_contained(case: Case, ctx: Ctx) -> None:
    r = run_case(case, ctx)
    assert r.metrics.peak_memory_bytes <= case.memory, (
        f"guest memory {r.metrics.peak_memory_bytes} exceeds the cap {case.memory}"
    )
    _next_run_is_clean()
