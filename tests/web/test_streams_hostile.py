"""The streams keep working, and keep their promises to themselves, whatever a program does to
the built-ins they use: replaced Promise and Array methods, an Object.prototype.then, and
rejections nobody asked for."""

from __future__ import annotations

import quickjail

# tee, pipeTo, pipeThrough with a TransformStream, a text decoder and async iteration, run
# after the program has replaced what naive internals would call
PIPELINE = """
const source = new ReadableStream({
  start(c) { c.enqueue("h\\u00e9"); c.enqueue("llo"); c.close(); } })
  .pipeThrough(new TextEncoderStream());
const [a, b] = source.tee();
const upper = new TransformStream({ transform(c, ctrl) { ctrl.enqueue(c.toUpperCase()); } });
const text = a.pipeThrough(new TextDecoderStream()).pipeThrough(upper);
let seen = "";
for await (const piece of text) seen += piece;
const sizes = [];
await b.pipeTo(new WritableStream({ write(c) { sizes[sizes.length] = c.length; } }));
"""


def test_replaced_promise_and_array_methods_do_not_reach_the_streams() -> None:
    r = quickjail.run_code_sync(
        """const calls = [];
        const spy = (name) => function () { calls[calls.length] = name;
          throw new Error("hijacked " + name); };
        Promise.prototype.then = spy("then");
        Promise.prototype.catch = spy("catch");
        Promise.prototype.finally = spy("finally");
        Promise.resolve = spy("resolve");
        Promise.reject = spy("reject");
        Promise.all = spy("all");
        for (const m of ["push", "shift", "pop", "splice", "slice", "map", "forEach", "includes"])
          Array.prototype[m] = spy(m);
        const TA = Object.getPrototypeOf(Uint8Array).prototype;
        for (const m of ["set", "slice", "subarray"]) TA[m] = spy(m);
        String.prototype.slice = spy("string slice");
        String.prototype.toLowerCase = spy("toLowerCase");
        globalThis.queueMicrotask = spy("queueMicrotask");
        globalThis.AbortController = spy("AbortController");
        TextDecoder.prototype.decode = spy("decode");
        TextEncoder.prototype.encode = spy("encode");
        Array.prototype[Symbol.iterator] = spy("iterator");
        """
        + PIPELINE.replace(
            "const [a, b] = source.tee();", "const ab = source.tee(), a = ab[0], b = ab[1];"
        )
        + """export default JSON.stringify([seen, sizes, calls]);"""
    )
    assert r.status == "success", r.error
    assert r.result == '["HÉLLO",[3,3],[]]'
    assert r.logs == []


def test_an_object_prototype_then_does_not_intercept_a_pipe() -> None:
    r = quickjail.run_code_sync(
        """let intercepted = 0;
        const chunks = [];
        const rs = new ReadableStream({ start(c) { c.enqueue("a"); c.enqueue("b"); c.close(); } });
        const ws = new WritableStream({ write(c) { chunks.push(c); } });
        Object.defineProperty(Object.prototype, "then", { configurable: true,
          get() { intercepted++; return undefined; } });
        const done = rs.pipeTo(ws);
        await new Promise((r) => setTimeout(r, 0));
        delete Object.prototype.then;
        await done;
        export default [intercepted, chunks]"""
    )
    assert r.status == "success", r.error
    assert r.result == [0, ["a", "b"]]


def test_the_streams_own_rejections_are_not_the_programs_unhandled_rejections() -> None:
    r = quickjail.run_code_sync(
        """const flush = () => new Promise((r) => setTimeout(r, 0));
        const boom = () => new Error("boom");
        // errored with a reader, with no reader, teed, piped both ways, transformed, aborted
        const r1 = new ReadableStream({ start(c) { c.error(boom()); } });
        r1.getReader();
        new ReadableStream({ start(c) { c.error(boom()); } });
        new ReadableStream({ pull(c) { c.error(boom()); } }).tee();
        new ReadableStream({ start(c) { c.error(boom()); } })
          .pipeTo(new WritableStream()).catch(() => {});
        ReadableStream.from([1]).pipeTo(new WritableStream({ write() { throw boom(); } }))
          .catch(() => {});
        new ReadableStream({ start(c) { c.error(boom()); } }).pipeThrough(new TransformStream());
        const w = new WritableStream({ write() { throw boom(); } }).getWriter();
        w.write(1).catch(() => {});
        new WritableStream().getWriter().abort(boom());
        const ts = new TransformStream({ transform() { throw boom(); } });
        ts.writable.getWriter().write(1).catch(() => {});
        ts.readable.getReader().releaseLock();
        new WritableStream({ start(c) { c.error(boom()); } }).getWriter().releaseLock();
        await flush(); await flush();
        export default "done" """
    )
    assert r.status == "success", r.error
    assert r.logs == []


def test_a_read_the_program_leaves_rejected_is_its_own_unhandled_rejection() -> None:
    r = quickjail.run_code_sync(
        """new ReadableStream({ start(c) { c.error(new RangeError("mine")); } }).getReader().read();
        await new Promise((r) => setTimeout(r, 0));
        export default "done" """
    )
    assert r.status == "success", r.error
    [entry] = r.logs
    assert entry.args[0] == "Unhandled promise rejection:"
    assert "RangeError: mine" in str(entry.args[1])


def test_a_stream_made_by_one_run_is_not_seen_by_the_next() -> None:
    src = """globalThis.rs ??= new ReadableStream({ start(c) { c.enqueue(1); } });
    const r = ReadableStream.prototype.getReader.call(rs);
    export default (await r.read()).value"""
    assert [quickjail.run_code_sync(src).result for _ in range(2)] == [1, 1]


def test_a_huge_queue_is_bounded_by_the_runs_memory_limit() -> None:
    r = quickjail.run_code_sync(
        """const rs = new ReadableStream({ start(c) {
          for (;;) c.enqueue("x".repeat(1000) + Math.random()); } });
        export default 1""",
        timeout=60,
    )
    assert r.status != "success"
    assert r.error is not None and r.error.name in {"RangeError", "InternalError", "MemoryError"}


def test_replaced_buffer_methods_do_not_reach_the_byte_streams() -> None:
    r = quickjail.run_code_sync(
        """const spy = (name) => function () { throw new Error("hijacked " + name); };
        const chunk = new Uint8Array([1, 2, 3]);
        ArrayBuffer.prototype.transfer = spy("transfer");
        ArrayBuffer.prototype.slice = spy("slice");
        const TA = Object.getPrototypeOf(Uint8Array).prototype;
        for (const m of ["set", "slice", "subarray"]) TA[m] = spy(m);
        Object.defineProperty(TA, "byteLength", { get: spy("byteLength") });
        Promise.prototype.then = spy("then");
        Array.prototype[Symbol.iterator] = spy("iterator");
        const rs = new ReadableStream({ type: "bytes",
          start(c) { c.enqueue(chunk); c.close(); } });
        const branches = rs.tee();
        const byob = branches[0].getReader({ mode: "byob" });
        const a = await byob.read(new Uint8Array(8));
        const b = await branches[1].getReader().read();
        export default JSON.stringify([a.value[0], a.value[2], b.value[1]]);"""
    )
    assert r.status == "success", r.error
    assert r.result == "[1,3,2]"
    assert r.logs == []
