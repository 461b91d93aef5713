"""A rejection with no handler after a microtask checkpoint fires "unhandledrejection" at the
global (a cancelable PromiseRejectionEvent, HTML 8.1.5.7); one handled later fires
"rejectionhandled". What no listener cancelled and is still unhandled at the end of the run is
logged as before ("Unhandled promise rejection:"); the run's own error is never an event.
"""

from __future__ import annotations

import quickjail


def _run(src: str, fuel: int | None = None) -> quickjail.CodeResult:
    """Run ``src``; ``tick()`` in it waits for a task, after the checkpoint's events."""
    tick = "const tick = () => new Promise((r) => setTimeout(r, 0));\n"
    return quickjail.run_code_sync(tick + src, deterministic=True, fuel=fuel)


def test_an_unhandled_rejection_is_an_event_with_its_promise_and_reason() -> None:
    r = _run(
        """let seen;
        const p = Promise.reject(new TypeError("nobody catches"));
        addEventListener("unhandledrejection", (e) => {
          seen = [e instanceof PromiseRejectionEvent, e.type, e.promise === p,
                  e.reason.message, e.cancelable, e.isTrusted, e.target === globalThis];
        });
        await tick();
        export default seen"""
    )
    assert r.status == "success", r.error
    assert r.result == [True, "unhandledrejection", True, "nobody catches", True, True, True]
    [entry] = r.logs
    assert entry.args[0] == "Unhandled promise rejection:"
    assert entry.args[1].startswith("TypeError: nobody catches")


def test_prevent_default_keeps_the_rejection_out_of_the_logs() -> None:
    r = _run(
        """addEventListener("unhandledrejection", (e) => {
          if (e.reason === "quiet") e.preventDefault();
        });
        Promise.reject("quiet");
        Promise.reject("loud");
        await tick();
        export default "done\""""
    )
    assert r.status == "success", r.error
    assert r.result == "done"
    assert [e.args for e in r.logs] == [["Unhandled promise rejection:", "loud"]]


def test_a_rejection_handled_in_the_same_checkpoint_fires_nothing() -> None:
    r = _run(
        """let n = 0;
        addEventListener("unhandledrejection", () => n++);
        const p = Promise.reject(1);
        await 0;
        p.catch(() => {});
        Promise.reject(2).catch(() => {});
        await tick();
        export default n"""
    )
    assert r.status == "success", r.error
    assert r.result == 0
    assert r.logs == []


def test_a_rejection_handled_later_fires_rejectionhandled_and_is_not_logged() -> None:
    r = _run(
        """const seen = [];
        addEventListener("unhandledrejection", (e) => seen.push(["un", e.reason]));
        addEventListener("rejectionhandled", (e) => {
          seen.push(["handled", e.reason, e.promise === p, e.cancelable]);
        });
        const p = Promise.reject("late");
        await new Promise((r) => setTimeout(r, 5));
        p.catch(() => {});
        await new Promise((r) => setTimeout(r, 5));
        export default seen"""
    )
    assert r.status == "success", r.error
    assert r.result == [["un", "late"], ["handled", "late", True, False]]
    assert r.logs == []


def test_a_handler_attached_by_the_listener_fires_no_rejectionhandled() -> None:
    r = _run(
        """const seen = [];
        addEventListener("unhandledrejection", (e) => {
          seen.push("un");
          e.promise.catch(() => {});
        });
        addEventListener("rejectionhandled", () => seen.push("handled"));
        Promise.reject("x");
        await new Promise((r) => setTimeout(r, 5));
        export default seen"""
    )
    assert r.status == "success", r.error
    assert r.result == ["un"]
    assert r.logs == []


def test_the_runs_own_error_is_not_an_unhandledrejection() -> None:
    r = _run(
        """globalThis.n = 0;
        addEventListener("unhandledrejection", () => { n++; console.log("event"); });
        export default async () => { await tick(); throw new Error("the run's error"); }"""
    )
    assert r.status == "error"
    assert "the run's error" in str(r.error)
    assert r.logs == []


def test_listeners_that_throw_or_add_listeners_do_not_stop_the_others() -> None:
    r = _run(
        """const seen = [];
        addEventListener("unhandledrejection", (e) => {
          seen.push("first");
          addEventListener("unhandledrejection", () => seen.push("added"));
          throw new Error("listener failed");
        });
        addEventListener("unhandledrejection", (e) => { seen.push("second"); e.preventDefault(); });
        Promise.reject(1);
        await tick();
        Promise.reject(2);
        await tick();
        export default seen"""
    )
    assert r.status == "success", r.error
    # the listener added during the first dispatch hears the second one only
    assert r.result == ["first", "second", "first", "second", "added"]
    assert [e.args[0] for e in r.logs] == ["Uncaught exception in an event listener:"] * 2


def test_a_listener_rejecting_again_in_a_loop_is_bounded() -> None:
    # each event makes a new unhandled rejection: the number tracked at once is capped (then
    # no more events), and the run ends normally, its logs within the output limits
    r = _run(
        """let n = 0;
        addEventListener("unhandledrejection", () => { n++; Promise.reject(n); });
        Promise.reject(0);
        await tick();
        export default n"""
    )
    assert r.status == "success", r.error
    assert r.result == 10000
    assert len(r.logs) == 100  # OutputLimits.max_rejections


def test_a_listener_that_never_stops_rejecting_runs_out_of_fuel() -> None:
    r = _run(
        """addEventListener("unhandledrejection", (e) => { e.preventDefault();
          Promise.reject(0); });
        Promise.reject(0);
        await tick();
        export default 0""",
        fuel=20_000_000,
    )
    assert r.status == "terminated" and r.reason == "fuel"


def test_an_event_is_made_even_when_the_program_broke_the_builtins() -> None:
    r = _run(
        """const seen = [];
        addEventListener("unhandledrejection", (e) => { seen[seen.length] = e.reason; });
        Map.prototype.set = Map.prototype.forEach = Array.prototype.push = () => { throw 1; };
        Map.prototype[Symbol.iterator] = () => { throw 2; };
        EventTarget.prototype.dispatchEvent = () => { throw 3; };
        Promise.reject("still seen");
        await tick();
        export default seen"""
    )
    assert r.status == "success", r.error
    assert r.result == ["still seen"]
    assert [e.args for e in r.logs] == [["Unhandled promise rejection:", "still seen"]]


def test_promise_rejection_event_needs_a_promise() -> None:
    r = _run(
        """const out = [];
        for (const f of [() => new PromiseRejectionEvent("x"),
                         () => new PromiseRejectionEvent("x", {}),
                         () => new PromiseRejectionEvent("x", { promise: 1 })])
          try { f(); out.push("no error"); } catch (e) { out.push(e.name); }
        const p = Promise.resolve();
        const e = new PromiseRejectionEvent("x", { promise: p, reason: 3 });
        out.push(e.promise === p, e.reason, e.cancelable,
                 Object.prototype.toString.call(e));
        export default out"""
    )
    assert r.status == "success", r.error
    assert r.result == [
        "TypeError",
        "TypeError",
        "TypeError",
        True,
        3,
        False,
        "[object PromiseRejectionEvent]",
    ]
