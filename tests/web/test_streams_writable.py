"""WritableStream, its default writer and controller behave as WHATWG Streams says, and so
do pipeTo and pipeThrough between streams.

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
const recorder = (log, extra = {}) => new WritableStream({
  write(c) { log.push(["write", c]); }, close() { log.push(["close"]); },
  abort(r) { log.push(["abort", name(r)]); }, ...extra });
"""

CASES: list[tuple[str, str, object]] = [
    (
        "interface_shape_follows_web_idl",
        """const p = WritableStreamDefaultWriter.prototype;
        return [WritableStream.length, WritableStreamDefaultWriter.length,
          Object.prototype.toString.call(new WritableStream()),
          Object.prototype.toString.call(new WritableStream().getWriter()),
          p.write.length, p.abort.length, p.close.length, p.releaseLock.length,
          Object.keys(WritableStream.prototype).sort()]""",
        [
            0,
            1,
            "[object WritableStream]",
            "[object WritableStreamDefaultWriter]",
            0,
            0,
            0,
            0,
            ["abort", "close", "getWriter", "locked"],
        ],
    ),
    (
        "writes_reach_the_sink_in_order_then_close",
        """const log = [];
        const w = recorder(log).getWriter();
        const results = await Promise.all([w.write("a"), w.write("b"), w.close()]);
        return [log, results, await settle(w.closed)]""",
        [[["write", "a"], ["write", "b"], ["close"]], [None, None, None], ["ok", None]],
    ),
    (
        "the_sink_gets_the_controller_and_one_write_at_a_time",
        """const log = [];
        let release;
        const ws = new WritableStream({
          write(c, ctrl) {
            log.push([c, Object.prototype.toString.call(ctrl)]);
            return new Promise((r) => { release = r; });
          } });
        const w = ws.getWriter();
        w.write(1); w.write(2);
        await flush();
        const first = log.length;
        release(); await flush();
        return [first, log]""",
        [
            1,
            [
                [1, "[object WritableStreamDefaultController]"],
                [2, "[object WritableStreamDefaultController]"],
            ],
        ],
    ),
    (
        "desired_size_and_ready_show_back_pressure",
        """let release;
        const ws = new WritableStream({ write() { return new Promise((r) => { release = r; }); } },
          { highWaterMark: 2 });
        const w = ws.getWriter();
        const sizes = [w.desiredSize];
        w.write("x"); sizes.push(w.desiredSize);
        w.write("y"); sizes.push(w.desiredSize);
        let ready = false;
        w.ready.then(() => { ready = true; });
        await flush();
        const readyUnderPressure = ready;
        release(); await flush();
        sizes.push(w.desiredSize);
        return [sizes, readyUnderPressure, ready]""",
        [[2, 1, 0, 1], False, True],
    ),
    (
        "a_size_strategy_counts_bytes",
        """const ws = new WritableStream({ write() { return new Promise(() => {}); } },
          new ByteLengthQueuingStrategy({ highWaterMark: 16 }));
        const w = ws.getWriter();
        w.write(new Uint8Array(10));
        const a = w.desiredSize;
        w.write(new Uint8Array(10));
        return [a, w.desiredSize]""",
        [6, -4],
    ),
    (
        "a_failing_write_errors_the_stream_and_later_writes",
        """const w = new WritableStream({ write() { throw new RangeError("w"); } }).getWriter();
        const first = settle(w.write(1));
        return [await first, await settle(w.write(2)), await settle(w.closed),
          await settle(w.close()), w.desiredSize]""",
        [
            ["err", "RangeError"],
            ["err", "RangeError"],
            ["err", "RangeError"],
            ["err", "TypeError"],
            None,
        ],
    ),
    (
        "abort_passes_its_reason_to_the_sink_and_rejects_queued_writes",
        """const log = [];
        let release;
        const ws = recorder(log, { write(c) { log.push(["write", c]);
          return new Promise((r) => { release = r; }); } });
        const w = ws.getWriter();
        const a = settle(w.write(1)), b = settle(w.write(2));
        await flush();
        const aborted = settle(w.abort(new EvalError("stop")));
        release();
        return [await a, await b, await aborted, await settle(w.closed), log]""",
        [
            ["ok", None],
            ["err", "EvalError"],
            ["ok", None],
            ["err", "EvalError"],
            [["write", 1], ["abort", "EvalError"]],
        ],
    ),
    (
        "the_controller_signal_aborts_with_the_reason",
        """let signal;
        const ws = new WritableStream({ start(c) { signal = c.signal; } });
        const before = signal.aborted;
        await ws.abort("because");
        return [Object.prototype.toString.call(signal), before, signal.aborted, signal.reason]""",
        ["[object AbortSignal]", False, True, "because"],
    ),
    (
        "controller_error_errors_the_stream",
        """let ctrl;
        const ws = new WritableStream({ start(c) { ctrl = c; } });
        const w = ws.getWriter();
        ctrl.error(new URIError("e"));
        return [await settle(w.write(1)), await settle(w.closed), await settle(w.ready)]""",
        [["err", "URIError"], ["err", "URIError"], ["err", "URIError"]],
    ),
    (
        "a_locked_stream_refuses_abort_close_and_a_second_writer",
        """const ws = new WritableStream();
        const w = ws.getWriter();
        let second;
        try { ws.getWriter(); } catch (e) { second = e.name; }
        const out = [ws.locked, second, await settle(ws.abort()), await settle(ws.close())];
        w.releaseLock();
        out.push(ws.locked, await settle(w.closed), await settle(w.write(1)));
        return out""",
        [
            True,
            "TypeError",
            ["err", "TypeError"],
            ["err", "TypeError"],
            False,
            ["err", "TypeError"],
            ["err", "TypeError"],
        ],
    ),
    (
        "writes_after_close_are_refused",
        """const w = new WritableStream().getWriter();
        w.close();
        return [await settle(w.write(1)), await settle(w.close())]""",
        [["err", "TypeError"], ["err", "TypeError"]],
    ),
    (
        "pipe_to_moves_every_chunk_and_closes_the_destination",
        """const log = [];
        await ReadableStream.from(["a", "b", "c"]).pipeTo(recorder(log));
        return log""",
        [["write", "a"], ["write", "b"], ["write", "c"], ["close"]],
    ),
    (
        "pipe_to_aborts_the_destination_with_a_source_error",
        """const log = [];
        const rs = new ReadableStream({
          start(c) { c.enqueue(1); c.error(new RangeError("src")); } });
        return [await settle(rs.pipeTo(recorder(log))), log]""",
        [["err", "RangeError"], [["abort", "RangeError"]]],
    ),
    (
        "pipe_to_cancels_the_source_with_a_destination_error",
        """let reason;
        const rs = new ReadableStream({ pull(c) { c.enqueue(1); },
          cancel(r) { reason = name(r); } });
        const ws = new WritableStream({ write() { throw new SyntaxError("dest"); } });
        return [await settle(rs.pipeTo(ws)), reason]""",
        [["err", "SyntaxError"], "SyntaxError"],
    ),
    (
        "pipe_options_prevent_close_abort_and_cancel",
        """const log = [];
        await ReadableStream.from([1]).pipeTo(recorder(log), { preventClose: true });
        const bad = () => new ReadableStream({ start(c) { c.error(new TypeError("x")); } });
        await settle(bad().pipeTo(recorder(log), { preventAbort: true }));
        let canceled = false;
        const rs = new ReadableStream({ cancel() { canceled = true; } });
        const ws = new WritableStream({ start(c) { c.error(new RangeError("y")); } });
        const r = await settle(rs.pipeTo(ws, { preventCancel: true }));
        return [log, r, canceled, rs.locked]""",
        [[["write", 1]], ["err", "RangeError"], False, False],
    ),
    (
        "pipe_to_with_an_abort_signal_aborts_and_cancels_with_its_reason",
        """const log = [];
        let reason, n = 0;
        const rs = new ReadableStream({ pull(c) { c.enqueue(n++); }, cancel(r) { reason = r; } },
          { highWaterMark: 0 });
        const ctrl = new AbortController();
        const slow = recorder(log, { write(c) { log.push(["write", c]);
          return new Promise((r) => setTimeout(r, 0)); } });
        const p = settle(rs.pipeTo(slow, { signal: ctrl.signal }));
        await flush();
        ctrl.abort("enough");
        const result = await p;
        return [result, reason, log.at(-1), rs.locked]""",
        [["err", "enough"], "enough", ["abort", "enough"], False],
    ),
    (
        "pipe_to_with_an_already_aborted_signal_writes_nothing",
        """const log = [];
        const r = await settle(ReadableStream.from([1, 2]).pipeTo(recorder(log),
          { signal: AbortSignal.abort() }));
        return [r, log]""",
        [["err", "AbortError"], [["abort", "AbortError"]]],
    ),
    (
        "pipe_to_refuses_locked_streams_and_bad_arguments",
        """const rs = new ReadableStream(), ws = new WritableStream();
        ws.getWriter();
        return [await settle(rs.pipeTo(ws)), await settle(rs.pipeTo({})),
          await settle(rs.pipeTo(new WritableStream(), { signal: {} })), rs.locked]""",
        [["err", "TypeError"], ["err", "TypeError"], ["err", "TypeError"], False],
    ),
    (
        "pipe_to_waits_for_the_destination_to_be_ready",
        """let release, writes = 0, n = 0;
        const rs = new ReadableStream({ pull(c) { c.enqueue(n++); } });
        const ws = new WritableStream({ write() { writes++;
          return new Promise((r) => { release = r; }); } }, { highWaterMark: 1 });
        rs.pipeTo(ws);
        await flush();
        const first = writes;
        release(); await flush();
        return [first, writes]""",
        [1, 2],
    ),
    (
        "an_enqueue_that_fulfils_a_pipes_read_does_not_write_synchronously",
        """let con, synchronous = false;
        new ReadableStream({ start(c) { con = c; } }, { highWaterMark: 0 }).pipeTo(
          new WritableStream({ write() { synchronous = true; } }));
        // Node 20 writes inside enqueue(); WPT piping/general-addition says it must not
        await Promise.resolve();
        con.enqueue();
        const during = synchronous;
        await flush();
        return [during, synchronous]""",
        [False, True],
    ),
    (
        "pipe_through_returns_the_readable_side",
        """const ts = new TransformStream({ transform(c, ctrl) { ctrl.enqueue(c * 2); } });
        const out = [];
        const r = ReadableStream.from([1, 2, 3]).pipeThrough(ts);
        for await (const v of r) out.push(v);
        return [r === ts.readable, out]""",
        [True, [2, 4, 6]],
    ),
    (
        "pipe_through_throws_for_locked_streams",
        """const rs = new ReadableStream();
        rs.getReader();
        const out = [];
        for (const f of [() => rs.pipeThrough(new TransformStream()),
                         () => new ReadableStream().pipeThrough({}),
                         () => new ReadableStream().pipeThrough(
                           { readable: new ReadableStream() })])
          try { f(); out.push("no error"); } catch (e) { out.push(e.name); }
        return out""",
        ["TypeError", "TypeError", "TypeError"],
    ),
]


@pytest.mark.parametrize(("body", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_writable_streams_and_pipes_follow_the_streams_standard(
    body: str, expected: object
) -> None:
    r = quickjail.run_code_sync(
        f"{PRELUDE}\nexport default json(await (async () => {{ {body} }})());", timeout=30
    )
    assert r.status == "success", r.error
    assert r.result == expected
    assert r.logs == []
