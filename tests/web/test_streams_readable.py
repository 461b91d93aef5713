"""ReadableStream, its default reader and controller behave as WHATWG Streams says.

Each case is the body of an async function whose value is what the spec makes of it; the
expected values are what Node 20 gives for the same body (workerd agrees on these).
"""

from __future__ import annotations

import pytest

import quickjail

# helpers every case may use: `flush()` lets every pending reaction and timer-0 callback run
PRELUDE = """
const flush = () => new Promise((r) => setTimeout(r, 0));
const name = (e) => (e && e.name) || String(e);
// results cross as JSON, as Node prints them: an undefined member is left out
const json = (v) => JSON.parse(JSON.stringify(v === undefined ? null : v));
const settle = (p) => p.then((v) => ["ok", v], (e) => ["err", name(e)]);
"""

CASES: list[tuple[str, str, object]] = [
    (
        "interface_shape_follows_web_idl",
        """const d = Object.getOwnPropertyDescriptor(globalThis, "ReadableStream");
        const p = ReadableStream.prototype;
        return [d.enumerable, d.writable, d.configurable, ReadableStream.length,
          ReadableStream.name, Object.prototype.toString.call(new ReadableStream()),
          p.cancel.length, p.getReader.length, p.pipeTo.length, p.pipeThrough.length,
          p.tee.length, ReadableStream.from.length,
          p[Symbol.asyncIterator] === p.values,
          Object.getOwnPropertyDescriptor(p, "locked").enumerable,
          ReadableStreamDefaultReader.length, typeof ReadableStreamDefaultController]""",
        [
            False,
            True,
            True,
            0,
            "ReadableStream",
            "[object ReadableStream]",
            0,
            0,
            1,
            1,
            0,
            1,
            True,
            True,
            1,
            "function",
        ],
    ),
    (
        "a_controller_cannot_be_constructed_and_methods_check_their_receiver",
        """const out = [];
        for (const f of [() => new ReadableStreamDefaultController(),
                         () => ReadableStream.prototype.getReader.call({}),
                         () => Object.getOwnPropertyDescriptor(ReadableStream.prototype,
                                 "locked").get.call({}),
                         () => new ReadableStreamDefaultReader({}),
                         () => new ReadableStream(null),
                         () => new ReadableStream({ start: 1 }),
                         () => new ReadableStream({ type: "nope" }),
                         () => new ReadableStream({}, { highWaterMark: -1 }),
                         () => new ReadableStream({}, { size: 2 })])
          try { f(); out.push("no error"); } catch (e) { out.push(e.name); }
        out.push(await settle(ReadableStream.prototype.cancel.call({})));
        out.push(await settle(ReadableStreamDefaultReader.prototype.read.call({})));
        return out""",
        [
            "TypeError",
            "TypeError",
            "TypeError",
            "TypeError",
            "TypeError",
            "TypeError",
            "TypeError",
            "RangeError",
            "TypeError",
            ["err", "TypeError"],
            ["err", "TypeError"],
        ],
    ),
    (
        "start_gets_the_controller_and_reads_see_the_chunks_in_order",
        """let ctrl;
        const rs = new ReadableStream({ start(c) { ctrl = c; c.enqueue("a"); c.enqueue("b"); } });
        const r = rs.getReader();
        const first = await r.read();
        ctrl.enqueue("c");
        ctrl.close();
        return [Object.prototype.toString.call(ctrl), first, await r.read(), await r.read(),
          await r.read(), rs.locked]""",
        [
            "[object ReadableStreamDefaultController]",
            {"value": "a", "done": False},
            {"value": "b", "done": False},
            {"value": "c", "done": False},
            {"done": True},
            True,
        ],
    ),
    (
        "desired_size_tracks_the_high_water_mark_and_chunk_sizes",
        """const sizes = [];
        let c;
        new ReadableStream({ start(x) { c = x; } },
          { highWaterMark: 10, size: (ch) => ch.length });
        sizes.push(c.desiredSize);
        c.enqueue("abc"); sizes.push(c.desiredSize);
        c.enqueue("defghijk"); sizes.push(c.desiredSize);
        c.close(); sizes.push(c.desiredSize);
        return sizes""",
        [10, 7, -1, -1],
    ),
    (
        "pull_is_called_only_while_the_queue_is_below_the_high_water_mark",
        """let pulls = 0, n = 0;
        const rs = new ReadableStream({
          pull(c) { pulls++; c.enqueue(n++); }
        }, { highWaterMark: 3 });
        await flush();
        const afterStart = pulls;
        const r = rs.getReader();
        await r.read();
        await flush();
        return [afterStart, pulls]""",
        [3, 4],
    ),
    (
        "pull_waits_for_its_own_promise_before_being_called_again",
        """let pulls = 0, release;
        const rs = new ReadableStream({
          pull(c) { pulls++; c.enqueue(pulls); return new Promise((r) => { release = r; }); }
        }, { highWaterMark: 5 });
        await flush();
        const before = pulls;
        release(); await flush();
        return [before, pulls]""",
        [1, 2],
    ),
    (
        "a_zero_high_water_mark_pulls_only_for_a_pending_read",
        """let pulls = 0;
        const rs = new ReadableStream({ pull(c) { pulls++; c.enqueue(pulls); } },
          { highWaterMark: 0 });
        await flush();
        const idle = pulls;
        const v = await rs.getReader().read();
        return [idle, v.value, pulls]""",
        [0, 1, 1],
    ),
    (
        "cancel_passes_its_reason_to_the_source_and_closes_the_stream",
        """const seen = [];
        const rs = new ReadableStream({
          start(c) { c.enqueue(1); },
          cancel(reason) { seen.push(reason); return "ignored"; },
        });
        const r = rs.getReader();
        const v = await r.cancel("why");
        return [v, seen, await r.read(), await settle(r.closed)]""",
        [None, ["why"], {"done": True}, ["ok", None]],
    ),
    (
        "cancel_on_a_locked_stream_rejects_and_on_an_errored_one_gives_the_error",
        """const rs = new ReadableStream();
        rs.getReader();
        const e = new ReadableStream({ start(c) { c.error(new RangeError("x")); } });
        return [await settle(rs.cancel()), await settle(e.cancel())]""",
        [["err", "TypeError"], ["err", "RangeError"]],
    ),
    (
        "an_error_rejects_pending_reads_closed_and_later_reads",
        """let c;
        const rs = new ReadableStream({ start(x) { c = x; } });
        const r = rs.getReader();
        const pending = settle(r.read());
        c.error(new SyntaxError("bad"));
        return [await pending, await settle(r.closed), await settle(r.read()),
          c.desiredSize]""",
        [["err", "SyntaxError"], ["err", "SyntaxError"], ["err", "SyntaxError"], None],
    ),
    (
        "a_throwing_start_throws_from_the_constructor_and_a_rejecting_one_errors",
        """let thrown;
        try { new ReadableStream({ start() { throw new EvalError("s"); } }); }
        catch (e) { thrown = e.name; }
        const rs = new ReadableStream({ start() { return Promise.reject(new URIError("u")); } });
        return [thrown, await settle(rs.getReader().read())]""",
        ["EvalError", ["err", "URIError"]],
    ),
    (
        "a_throwing_size_errors_the_stream_and_rethrows",
        """let c;
        const rs = new ReadableStream({ start(x) { c = x; } },
          { size() { throw new RangeError("size"); } });
        let thrown;
        try { c.enqueue(1); } catch (e) { thrown = e.name; }
        return [thrown, await settle(rs.getReader().closed)]""",
        ["RangeError", ["err", "RangeError"]],
    ),
    (
        "enqueue_after_close_throws",
        """let c;
        new ReadableStream({ start(x) { c = x; } });
        c.close();
        const out = [];
        for (const f of [() => c.enqueue(1), () => c.close()])
          try { f(); out.push("no error"); } catch (e) { out.push(e.name); }
        return out""",
        ["TypeError", "TypeError"],
    ),
    (
        "release_lock_rejects_pending_reads_and_closed_and_unlocks",
        """const rs = new ReadableStream();
        const r = rs.getReader();
        const pending = settle(r.read());
        const closed = settle(r.closed);
        r.releaseLock();
        r.releaseLock();
        return [await pending, await closed, rs.locked, await settle(r.read()),
          rs.getReader() instanceof ReadableStreamDefaultReader]""",
        [["err", "TypeError"], ["err", "TypeError"], False, ["err", "TypeError"], True],
    ),
    (
        "a_second_reader_is_refused_while_locked",
        """const rs = new ReadableStream();
        rs.getReader();
        const out = [];
        for (const f of [() => rs.getReader(), () => new ReadableStreamDefaultReader(rs)])
          try { f(); out.push("no error"); } catch (e) { out.push(e.name); }
        return out""",
        ["TypeError", "TypeError"],
    ),
    (
        "tee_gives_both_branches_every_chunk",
        """const rs = new ReadableStream({
          start(c) { c.enqueue("a"); c.enqueue("b"); c.close(); } });
        const [x, y] = rs.tee();
        const read = async (s) => { const o = []; for await (const v of s) o.push(v); return o; };
        return [rs.locked, await read(x), await read(y)]""",
        [True, ["a", "b"], ["a", "b"]],
    ),
    (
        "tee_cancels_the_source_with_both_reasons_once_both_branches_cancel",
        """let reason;
        const rs = new ReadableStream({ cancel(r) { reason = r; } });
        const [x, y] = rs.tee();
        const p1 = x.cancel("one");
        await flush();
        const early = reason;
        await y.cancel("two");
        await p1;
        return [early === undefined, reason]""",
        [True, ["one", "two"]],
    ),
    (
        "tee_propagates_an_error_to_both_branches",
        """let c;
        const rs = new ReadableStream({ start(x) { c = x; } });
        const [x, y] = rs.tee();
        c.error(new TypeError("t"));
        return [await settle(x.getReader().read()), await settle(y.getReader().closed)]""",
        [["err", "TypeError"], ["err", "TypeError"]],
    ),
    (
        "async_iteration_reads_to_the_end_and_releases_the_lock",
        """const rs = ReadableStream.from([1, 2, 3]);
        const out = [];
        for await (const v of rs) out.push(v);
        return [out, rs.locked]""",
        [[1, 2, 3], False],
    ),
    (
        "breaking_out_of_for_await_cancels_the_stream",
        """let reason = "not called", n = 0;
        const rs = new ReadableStream({ pull(c) { c.enqueue(n++); }, cancel(r) { reason = r; } });
        for await (const v of rs) if (v === 2) break;
        return [reason, rs.locked, await settle(rs.getReader().closed)]""",
        [None, False, ["ok", None]],
    ),
    (
        "values_with_prevent_cancel_leaves_the_stream_readable",
        """let canceled = false, n = 0;
        const rs = new ReadableStream({ pull(c) { c.enqueue(n++); },
          cancel() { canceled = true; } });
        for await (const v of rs.values({ preventCancel: true })) if (v === 1) break;
        const r = rs.getReader();
        return [canceled, rs.locked, (await r.read()).done]""",
        [False, True, False],
    ),
    (
        "the_async_iterator_has_the_web_idl_shape",
        """const it = new ReadableStream().values();
        const proto = Object.getPrototypeOf(it);
        const asyncIterProto = Object.getPrototypeOf(Object.getPrototypeOf(
          (async function* () {}).prototype));
        // Node 20 lacks the Web IDL class string "ReadableStream AsyncIterator"
        return [Object.prototype.toString.call(it), Object.getPrototypeOf(proto) === asyncIterProto,
          Object.keys(proto).sort(), typeof it[Symbol.asyncIterator],
          await settle(it.return("r")), await it.next()]""",
        [
            "[object ReadableStream AsyncIterator]",
            True,
            ["next", "return"],
            "function",
            ["ok", {"done": True, "value": "r"}],
            {"done": True},
        ],
    ),
    (
        "an_errored_stream_rejects_the_iteration",
        """const rs = new ReadableStream({
          start(c) { c.enqueue(1); c.error(new RangeError("r")); } });
        const out = [];
        try { for await (const v of rs) out.push(v); } catch (e) { out.push(e.name); }
        return out""",
        ["RangeError"],
    ),
    (
        "from_takes_async_iterables_sync_iterables_and_awaits_promised_values",
        """async function* gen() { yield "x"; yield "y"; }
        const read = async (s) => { const o = []; for await (const v of s) o.push(v); return o; };
        return [await read(ReadableStream.from(gen())),
          await read(ReadableStream.from(new Set([1, 2]))),
          await read(ReadableStream.from([Promise.resolve(7), 8])),
          await read(ReadableStream.from("hi"))]""",
        [["x", "y"], [1, 2], [7, 8], ["h", "i"]],
    ),
    (
        "from_refuses_non_iterables_and_cancel_calls_the_iterators_return",
        """let thrown;
        try { ReadableStream.from({}); } catch (e) { thrown = e.name; }
        let returned;
        const it = { [Symbol.iterator]() { return this; },
          next() { return { value: 1, done: false }; },
          return(v) { returned = v; return {}; } };
        const rs = ReadableStream.from(it);
        await rs.cancel("stop");
        // Node 20 calls return() without the reason, which the spec passes on
        return [thrown, returned]""",
        ["TypeError", "stop"],
    ),
    (
        "from_pulls_lazily",
        """let calls = 0;
        const it = { [Symbol.iterator]() { return this; },
          next() { calls++; return { value: calls, done: calls > 3 }; } };
        const rs = ReadableStream.from(it);
        await flush();
        const idle = calls;
        const r = rs.getReader();
        await r.read();
        return [idle, calls]""",
        [0, 1],
    ),
    (
        "get_reader_with_byob_mode_is_refused_for_a_default_stream",
        """const out = [];
        for (const o of [{ mode: "byob" }, { mode: "other" }])
          try { new ReadableStream().getReader(o); out.push("no error"); }
          catch (e) { out.push(e.name); }
        return out""",
        ["TypeError", "TypeError"],
    ),
]


@pytest.mark.parametrize(("body", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_readable_streams_follow_the_streams_standard(body: str, expected: object) -> None:
    r = quickjail.run_code_sync(
        f"{PRELUDE}\nexport default json(await (async () => {{ {body} }})());", timeout=30
    )
    assert r.status == "success", r.error
    assert r.result == expected
    assert r.logs == []
