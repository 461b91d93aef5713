"""Event, CustomEvent and EventTarget behave as WHATWG DOM says, for targets with no tree.

Each case is a program whose default export is what the spec makes of it.
"""

from __future__ import annotations

import pytest

import quickjail

CASES: list[tuple[str, str, object]] = [
    (
        "event_defaults",
        """const e = new Event("x");
        return [e.type, e.bubbles, e.cancelable, e.composed, e.defaultPrevented, e.eventPhase,
                e.target, e.currentTarget, e.isTrusted, e.returnValue, e.composedPath().length,
                typeof e.timeStamp]""",
        ["x", False, False, False, False, 0, None, None, False, True, 0, "number"],
    ),
    (
        "event_init_dict",
        """const e = new Event("y", { bubbles: 1, cancelable: "yes", composed: true });
        return [e.bubbles, e.cancelable, e.composed]""",
        [True, True, True],
    ),
    (
        "event_phase_constants",
        "return [Event.NONE, Event.CAPTURING_PHASE, Event.AT_TARGET, Event.BUBBLING_PHASE,"
        " new Event('x').AT_TARGET]",
        [0, 1, 2, 3, 2],
    ),
    (
        "event_needs_new_and_a_type",
        """const out = [];
        for (const f of [() => Event("x"), () => new Event(), () => new Event("x", 5)])
          try { f(); out.push("no error"); } catch (e) { out.push(e.name); }
        return out""",
        ["TypeError", "TypeError", "TypeError"],
    ),
    (
        "is_trusted_is_an_own_unforgeable_accessor",
        """const e = new Event("x"), d = Object.getOwnPropertyDescriptor(e, "isTrusted");
        return [typeof d.get, d.configurable, d.enumerable, e.isTrusted]""",
        ["function", False, True, False],
    ),
    (
        "listeners_run_in_order_with_the_target_as_this",
        """const t = new EventTarget(), out = [];
        t.addEventListener("x", function (e) { out.push(["a", this === t, e.target === t,
          e.currentTarget === t, e.eventPhase, e.composedPath()[0] === t]); });
        t.addEventListener("x", () => out.push("b"));
        t.addEventListener("other", () => out.push("never"));
        const e = new Event("x");
        t.dispatchEvent(e);
        out.push([e.eventPhase, e.currentTarget, e.target === t, e.composedPath().length]);
        return out""",
        [["a", True, True, True, 2, True], "b", [0, None, True, 0]],
    ),
    (
        "capture_listeners_run_first_at_the_target",
        """const t = new EventTarget(), out = [];
        t.addEventListener("x", () => out.push("bubble"));
        t.addEventListener("x", () => out.push("capture"), true);
        t.addEventListener("x", () => out.push("capture2"), { capture: true });
        t.dispatchEvent(new Event("x"));
        return out""",
        ["capture", "capture2", "bubble"],
    ),
    (
        "the_same_listener_and_capture_is_added_once",
        """const t = new EventTarget(), out = [], f = () => out.push(1);
        t.addEventListener("x", f); t.addEventListener("x", f); t.addEventListener("x", f, {});
        t.addEventListener("x", f, true);
        t.dispatchEvent(new Event("x"));
        return out.length""",
        2,
    ),
    (
        "remove_event_listener_matches_capture",
        """const t = new EventTarget(), out = [], f = () => out.push(1);
        t.addEventListener("x", f); t.addEventListener("x", f, true);
        t.removeEventListener("x", f, true);
        t.dispatchEvent(new Event("x"));
        t.removeEventListener("x", f);
        t.dispatchEvent(new Event("x"));
        return out.length""",
        1,
    ),
    (
        "once_removes_the_listener_before_it_runs",
        """const t = new EventTarget(); let n = 0;
        t.addEventListener("x", () => { n++; t.dispatchEvent(new Event("x")); }, { once: true });
        t.dispatchEvent(new Event("x")); t.dispatchEvent(new Event("x"));
        return n""",
        1,
    ),
    (
        "a_listener_removed_during_dispatch_does_not_run",
        """const t = new EventTarget(), out = [];
        const b = () => out.push("b");
        t.addEventListener("x", () => { out.push("a"); t.removeEventListener("x", b); });
        t.addEventListener("x", b);
        t.addEventListener("x", () => {
          out.push("c"); t.addEventListener("x", () => out.push("late")); });
        t.dispatchEvent(new Event("x"));
        return out""",
        ["a", "c"],
    ),
    (
        "handle_event_objects_are_called_with_themselves_as_this",
        """const t = new EventTarget(), out = [];
        const obj = { handleEvent(e) { out.push(this === obj, e.type); } };
        t.addEventListener("x", obj);
        t.dispatchEvent(new Event("x"));
        obj.handleEvent = function () { out.push("replaced"); };
        t.dispatchEvent(new Event("x"));
        return out""",
        [True, "x", "replaced"],
    ),
    (
        "dispatch_returns_false_only_when_a_cancelable_event_is_canceled",
        """const t = new EventTarget();
        t.addEventListener("x", (e) => e.preventDefault());
        const a = new Event("x", { cancelable: true }), b = new Event("x");
        return [t.dispatchEvent(a), a.defaultPrevented, a.returnValue, t.dispatchEvent(b),
                b.defaultPrevented]""",
        [False, True, False, True, False],
    ),
    (
        "return_value_false_cancels",
        """const t = new EventTarget();
        t.addEventListener("x", (e) => { e.returnValue = false; });
        return t.dispatchEvent(new Event("x", { cancelable: true }))""",
        False,
    ),
    (
        "passive_listeners_cannot_cancel",
        """const t = new EventTarget();
        t.addEventListener("x", (e) => e.preventDefault(), { passive: true });
        const e = new Event("x", { cancelable: true });
        return [t.dispatchEvent(e), e.defaultPrevented]""",
        [True, False],
    ),
    (
        "stop_immediate_propagation_stops_the_other_listeners",
        """const t = new EventTarget(), out = [];
        t.addEventListener("x", (e) => { out.push(1); e.stopImmediatePropagation(); });
        t.addEventListener("x", () => out.push(2));
        t.dispatchEvent(new Event("x"));
        t.dispatchEvent(new Event("x"));
        return out""",
        [1, 1],
    ),
    (
        "stop_propagation_in_a_capture_listener_skips_the_others",
        """const t = new EventTarget(), out = [];
        t.addEventListener("x", (e) => { out.push("c"); e.stopPropagation(); }, true);
        t.addEventListener("x", () => out.push("c2"), true);
        t.addEventListener("x", () => out.push("b"));
        const e = new Event("x");
        t.dispatchEvent(e);
        return [out, e.cancelBubble]""",
        [["c", "c2"], False],
    ),
    (
        "a_throwing_listener_does_not_stop_the_others",
        """const t = new EventTarget(), out = [];
        t.addEventListener("x", () => { throw new Error("boom"); });
        t.addEventListener("x", { handleEvent: 5 });
        t.addEventListener("x", () => out.push("after"));
        return [t.dispatchEvent(new Event("x")), out]""",
        [True, ["after"]],
    ),
    (
        "dispatching_an_event_being_dispatched_is_an_invalid_state_error",
        """const t = new EventTarget(); let err;
        t.addEventListener("x", (e) => { try { t.dispatchEvent(e); } catch (x) { err = x; } });
        t.dispatchEvent(new Event("x"));
        return [err instanceof DOMException, err.name, err.code]""",
        [True, "InvalidStateError", 11],
    ),
    (
        "bad_arguments_are_type_errors",
        """const t = new EventTarget(), out = [];
        for (const f of [() => t.addEventListener("x"), () => t.addEventListener("x", 5),
                         () => t.dispatchEvent({ type: "x" }), () => t.dispatchEvent(),
                         () => t.addEventListener("x", () => {}, { signal: null }),
                         () => EventTarget.prototype.addEventListener.call({}, "x", null)])
          try { f(); out.push("no error"); } catch (e) { out.push(e.name); }
        t.addEventListener("x", null); t.addEventListener("x", undefined);
        return out""",
        ["TypeError"] * 6,
    ),
    (
        "custom_event_carries_detail",
        """const t = new EventTarget(); let got;
        t.addEventListener("msg", (e) => { got = [e.detail, e instanceof Event, e.type]; });
        t.dispatchEvent(new CustomEvent("msg", { detail: { n: 1 } }));
        return [got, new CustomEvent("x").detail,
                Object.prototype.toString.call(new CustomEvent("x"))]""",
        [[{"n": 1}, True, "msg"], None, "[object CustomEvent]"],
    ),
    (
        "subclasses_of_event_target_work",
        """class Bus extends EventTarget {
          emit(n) { return this.dispatchEvent(new CustomEvent("n", { detail: n })); } }
        const bus = new Bus(), out = [];
        bus.addEventListener("n", (e) => out.push(e.detail));
        bus.emit(1); bus.emit(2);
        return [out, bus instanceof EventTarget]""",
        [[1, 2], True],
    ),
    (
        "the_globals_are_web_idl_shaped",
        """const d = Object.getOwnPropertyDescriptor(globalThis, "EventTarget");
        const m = Object.getOwnPropertyDescriptor(EventTarget.prototype, "addEventListener");
        return [d.enumerable, d.writable, d.configurable, m.enumerable,
                Object.prototype.toString.call(new EventTarget()), Event.length]""",
        [False, True, True, True, "[object EventTarget]", 1],
    ),
]


@pytest.mark.parametrize(("body", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_events_follow_the_dom_standard(body: str, expected: object) -> None:
    r = quickjail.run_code_sync(f"export default (() => {{ {body} }})()")
    assert r.status == "success", r.error
    assert r.result == expected


def test_a_throwing_listener_is_reported_as_an_error_log() -> None:
    r = quickjail.run_code_sync(
        """const t = new EventTarget();
        t.addEventListener("x", () => { throw new RangeError("boom"); });
        t.dispatchEvent(new Event("x"));
        export default "carried on" """
    )
    assert r.status == "success" and r.result == "carried on"
    [entry] = r.logs
    assert entry.level == "error"
    assert entry.args[0] == "Uncaught exception in an event listener:"
    assert entry.args[1].startswith("RangeError: boom")


def test_listeners_do_not_survive_into_the_next_run() -> None:
    src = """globalThis.t ??= new EventTarget(); let n = 0;
    EventTarget.prototype.addEventListener.call(t, "x", () => n++);
    t.dispatchEvent(new Event("x")); export default n"""
    assert [quickjail.run_code_sync(src).result for _ in range(2)] == [1, 1]


def test_a_program_redefining_the_prototype_does_not_break_platform_dispatch() -> None:
    r = quickjail.run_code_sync(
        """const c = new AbortController(); let fired = 0;
        c.signal.addEventListener("abort", () => fired++);
        EventTarget.prototype.dispatchEvent = () => { throw new Error("hijacked"); };
        Array.prototype.push = Array.prototype.slice = () => { throw new Error("hijacked"); };
        c.abort();
        export default fired"""
    )
    assert r.status == "success", r.error
    assert r.result == 1
