"""MessageChannel and MessagePort (HTML 9.4) within one run: messages are cloned when posted and
delivered to the entangled port as tasks, in order, once it is started."""

from __future__ import annotations

import quickjail
from quickjail.sandbox import TypedArray


def _run(src: str, fuel: int | None = None) -> quickjail.CodeResult:
    """Run ``src``; ``await tick()`` in it lets a few tasks (deliveries) run."""
    tick = (
        "const tick = async () => {"
        " for (let i = 0; i < 4; i++) await new Promise((r) => setTimeout(r, 1)); };\n"
    )
    return quickjail.run_code_sync(tick + src, deterministic=True, fuel=fuel)


def test_messages_are_clones_delivered_as_tasks_in_order() -> None:
    r = _run(
        """const out = [];
        const { port1, port2 } = new MessageChannel();
        port2.onmessage = (e) => out.push([e.data, e instanceof MessageEvent, e.type,
          e.target === port2, e.isTrusted, e.origin, e.lastEventId, e.source, e.ports.length]);
        const sent = { n: 1, s: new Set([2]) };
        port1.postMessage(sent);
        port1.postMessage("second");
        sent.n = 99;
        out.push("posted");
        await tick();
        export default out"""
    )
    assert r.status == "success", r.error
    assert r.result == [
        "posted",
        [{"n": 1, "s": {2}}, True, "message", True, True, "", "", None, 0],
        ["second", True, "message", True, True, "", "", None, 0],
    ]


def test_a_port_queues_until_it_is_started_or_has_a_message_listener() -> None:
    r = _run(
        """const out = [];
        const { port1, port2 } = new MessageChannel();
        port1.addEventListener("other", (e) => out.push("never"));
        port2.postMessage("a");
        await tick();
        out.push("started");
        port1.start();
        port1.addEventListener("message", (e) => out.push(e.data));
        port2.postMessage("b");
        await tick();
        const c = new MessageChannel();
        c.port1.addEventListener("message", (e) => out.push(e.data));
        c.port2.postMessage("no start needed");
        await tick();
        export default out"""
    )
    assert r.status == "success", r.error
    # "a" waited for start(); its delivery is a task, so the listener added after start()
    # hears it
    assert r.result == ["started", "a", "b", "no start needed"]


def test_close_drops_later_messages_and_delivers_those_posted_before() -> None:
    r = _run(
        """const out = [];
        const { port1, port2 } = new MessageChannel();
        port1.onmessage = (e) => out.push(["1", e.data]);
        port2.onmessage = (e) => out.push(["2", e.data]);
        port1.postMessage("queued for 2");
        port2.close();
        port1.postMessage("after close");
        port2.postMessage("from closed");
        await tick();
        export default out"""
    )
    assert r.status == "success", r.error
    assert r.result == [["2", "queued for 2"]]


def test_array_buffers_transfer_and_other_values_refuse_to_clone() -> None:
    r = _run(
        """const out = [];
        const { port1, port2 } = new MessageChannel();
        port2.onmessage = (e) => out.push(e.data);
        const a = new ArrayBuffer(4), b = new ArrayBuffer(2);
        port1.postMessage(a, [a]);
        port1.postMessage(b, { transfer: [b] });
        out.push(a.byteLength, b.byteLength);
        for (const bad of [() => port1.postMessage(() => 1), () => port1.postMessage(1, [port2]),
                           () => port1.postMessage(), () => new MessagePort()])
          try { bad(); out.push("no error"); } catch (e) { out.push(e.name); }
        await tick();
        export default out"""
    )
    assert r.status == "success", r.error
    assert r.result == [
        0,
        0,
        "DataCloneError",
        "DataCloneError",
        "TypeError",
        "TypeError",
        TypedArray("ArrayBuffer", b"\0" * 4),
        TypedArray("ArrayBuffer", b"\0" * 2),
    ]


def test_the_classes_have_their_web_idl_shape() -> None:
    r = _run(
        """const c = new MessageChannel();
        const e = new MessageEvent("message", { data: 1, origin: 2, ports: [c.port1] });
        export default [Object.prototype.toString.call(c), Object.prototype.toString.call(c.port1),
          c.port1 instanceof EventTarget, c.port1 === c.port1, MessagePort.length,
          e.data, e.origin, e.ports[0] === c.port1, Object.isFrozen(e.ports),
          new MessageEvent("x").data, Object.keys(MessagePort.prototype).sort()]"""
    )
    assert r.status == "success", r.error
    assert r.result == [
        "[object MessageChannel]",
        "[object MessagePort]",
        True,
        True,
        0,
        1,
        "2",
        True,
        True,
        None,
        ["addEventListener", "close", "onmessage", "onmessageerror", "postMessage", "start"],
    ]


def test_a_program_replacing_the_builtins_does_not_stop_delivery() -> None:
    r = _run(
        """const out = [];
        const { port1, port2 } = new MessageChannel();
        port2.onmessage = (e) => { out[out.length] = e.data; };
        MessagePort.prototype.start = EventTarget.prototype.dispatchEvent = () => { throw 1; };
        Array.prototype.push = Array.prototype.shift = () => { throw 2; };
        globalThis.structuredClone = () => { throw 3; };
        port1.postMessage("kept");
        await tick();
        export default out"""
    )
    assert r.status == "success", r.error
    assert r.result == ["kept"]


def test_many_messages_are_delivered_in_linear_work_and_a_ping_pong_is_bounded_by_fuel() -> None:
    many = _run(
        """let n = 0, last;
        const { port1, port2 } = new MessageChannel();
        port2.onmessage = (e) => { n++; last = e.data; };
        for (let i = 0; i < 20000; i++) port1.postMessage(i);
        while (n < 20000) await tick();
        export default [n, last]""",
    )
    assert many.status == "success", many.error
    assert many.result == [20000, 19999]
    endless = _run(
        """const { port1, port2 } = new MessageChannel();
        port1.onmessage = (e) => port1.postMessage(e.data);
        port2.onmessage = (e) => port2.postMessage(e.data);
        port1.postMessage(0);
        await new Promise(() => setTimeout(() => {}, 1e9));""",
        fuel=20_000_000,
    )
    assert endless.status == "terminated" and endless.reason == "fuel"
