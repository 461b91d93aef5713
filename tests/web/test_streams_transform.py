"""TransformStream, its controller and the two queuing strategies behave as WHATWG Streams says.

Each case is the body of an async function whose value is what the spec makes of it; the
expected values are what Node 20 gives for the same body.
"""

from __future__ import annotations

import pytest

import quickjail

PRELUDE = """
const flush = () => new Promise((r) => setTimeout(r, 0));
const name = (e) => (e && e.name) || String(e);
const json = (v) => JSON.parse(JSON.stringify(v === undefined ? null : v));
const settle = (p) => p.then((v) => ["ok", v], (e) => ["err", name(e)]);
const readAll = async (s) => { const o = []; for await (const v of s) o.push(v); return o; };
"""

CASES: list[tuple[str, str, object]] = [
    (
        "interface_shape_follows_web_idl",
        """const ts = new TransformStream();
        return [TransformStream.length, Object.prototype.toString.call(ts),
          Object.keys(TransformStream.prototype).sort(),
          ts.readable instanceof ReadableStream, ts.writable instanceof WritableStream,
          typeof TransformStreamDefaultController,
          Object.keys(TransformStreamDefaultController.prototype).sort()]""",
        [
            0,
            "[object TransformStream]",
            ["readable", "writable"],
            True,
            True,
            "function",
            ["desiredSize", "enqueue", "error", "terminate"],
        ],
    ),
    (
        "an_identity_transform_passes_chunks_through",
        """const ts = new TransformStream();
        const w = ts.writable.getWriter();
        w.write("a"); w.write("b"); w.close();
        return readAll(ts.readable)""",
        ["a", "b"],
    ),
    (
        "transform_and_flush_can_enqueue_any_number_of_chunks",
        """const ts = new TransformStream({
          start(c) { c.enqueue("start"); },
          transform(chunk, c) { for (const ch of chunk) c.enqueue(ch); },
          flush(c) { c.enqueue("end"); },
        });
        const w = ts.writable.getWriter();
        w.write("xy"); w.write(""); w.close();
        return readAll(ts.readable)""",
        ["start", "x", "y", "end"],
    ),
    (
        "a_throwing_transform_errors_both_sides",
        """const ts = new TransformStream({ transform() { throw new RangeError("t"); } });
        const w = ts.writable.getWriter();
        const read = settle(ts.readable.getReader().read());
        return [await settle(w.write(1)), await read, await settle(w.closed)]""",
        [["err", "RangeError"], ["err", "RangeError"], ["err", "RangeError"]],
    ),
    (
        "controller_error_and_terminate",
        """let c1, c2;
        const a = new TransformStream({ start(c) { c1 = c; } });
        const b = new TransformStream({ start(c) { c2 = c; } });
        c1.error(new URIError("e"));
        c2.enqueue("last");
        c2.terminate();
        return [await settle(a.readable.getReader().read()),
          await settle(a.writable.getWriter().closed),
          await readAll(b.readable), await settle(b.writable.getWriter().write(1))]""",
        [["err", "URIError"], ["err", "URIError"], ["last"], ["err", "TypeError"]],
    ),
    (
        "transform_runs_only_when_the_readable_side_wants_a_chunk",
        """let transforms = 0;
        const ts = new TransformStream({ transform(c, ctrl) { transforms++; ctrl.enqueue(c); } });
        const w = ts.writable.getWriter();
        const sizes = [w.desiredSize];
        w.write(1); w.write(2); w.write(3);
        await flush();
        const held = transforms;
        const r = ts.readable.getReader();
        await r.read(); await flush();
        return [sizes, held, transforms]""",
        [[1], 0, 1],
    ),
    (
        "desired_size_is_the_readable_sides",
        """let ctrl;
        new TransformStream({ start(c) { ctrl = c; } }, undefined, { highWaterMark: 3 });
        const a = ctrl.desiredSize;
        ctrl.enqueue(1);
        return [a, ctrl.desiredSize]""",
        [3, 2],
    ),
    (
        "canceling_the_readable_side_errors_the_writable_side",
        """let reason;
        const ts = new TransformStream({ cancel(r) { reason = r; } });
        await ts.readable.cancel("gone");
        const w = ts.writable.getWriter();
        return [reason, await settle(w.closed)]""",
        ["gone", ["err", "gone"]],
    ),
    (
        "terminate_right_after_cancel_leaves_the_cancel_fulfilled",
        """let ctrl;
        const ts = new TransformStream({ start(c) { ctrl = c; } });
        const cancelled = settle(ts.readable.cancel("r"));
        ctrl.terminate();
        return [await cancelled, await settle(ts.writable.getWriter().closed)]""",
        [["ok", None], ["err", "TypeError"]],
    ),
    (
        "aborting_the_writable_side_errors_the_readable_side",
        """const ts = new TransformStream();
        await ts.writable.abort(new EvalError("a"));
        return settle(ts.readable.getReader().read())""",
        ["err", "EvalError"],
    ),
    (
        "invalid_types_and_strategies_are_refused",
        """const out = [];
        for (const f of [() => new TransformStream({ readableType: "bytes" }),
                         () => new TransformStream({ writableType: "bytes" }),
                         () => new TransformStream({ transform: 1 }),
                         () => new TransformStream({}, { highWaterMark: NaN })])
          try { f(); out.push("no error"); } catch (e) { out.push(e.name); }
        return out""",
        ["RangeError", "RangeError", "TypeError", "RangeError"],
    ),
    (
        "queuing_strategies_measure_chunks",
        """const b = new ByteLengthQueuingStrategy({ highWaterMark: 8 });
        const c = new CountQueuingStrategy({ highWaterMark: 2 });
        const out = [b.highWaterMark, b.size(new Uint8Array(5)), c.highWaterMark, c.size("x"),
          b.size === new ByteLengthQueuingStrategy({ highWaterMark: 1 }).size,
          b.size.name, b.size.length, Object.prototype.toString.call(c),
          ByteLengthQueuingStrategy.length, Object.keys(CountQueuingStrategy.prototype).sort()];
        for (const f of [() => new CountQueuingStrategy(), () => new CountQueuingStrategy({}),
                         () => new b.size()])
          try { f(); out.push("no error"); } catch (e) { out.push(e.name); }
        return out""",
        [
            8,
            5,
            2,
            1,
            True,
            "size",
            1,
            "[object CountQueuingStrategy]",
            1,
            ["highWaterMark", "size"],
            "TypeError",
            "TypeError",
            "TypeError",
        ],
    ),
]


@pytest.mark.parametrize(("body", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_transform_streams_follow_the_streams_standard(body: str, expected: object) -> None:
    r = quickjail.run_code_sync(
        f"{PRELUDE}\nexport default json(await (async () => {{ {body} }})());", timeout=30
    )
    assert r.status == "success", r.error
    assert r.result == expected
    assert r.logs == []
