"""The global scope is a Worker's: self, navigator, an EventTarget global, reportError with
"error" events, ErrorEvent and QuotaExceededError (HTML 8.1, Web IDL 3.14.2).

Each case is a program whose default export is what the standards (or, where they leave it
open, a Cloudflare Worker) make of it.
"""

from __future__ import annotations

import pytest

import quickjail
from quickjail.sandbox import UNDEFINED

CASES: list[tuple[str, str, object]] = [
    (
        "self_is_the_global_object",
        """const d = Object.getOwnPropertyDescriptor(globalThis, "self");
        return [self === globalThis, d.enumerable, d.writable, d.configurable]""",
        [True, False, True, True],
    ),
    (
        "navigator_describes_quickjail_with_one_core",
        """const d = Object.getOwnPropertyDescriptor(Navigator.prototype, "userAgent");
        return [navigator.userAgent, navigator.hardwareConcurrency, navigator.language,
                navigator.languages, navigator.languages === navigator.languages,
                navigator.platform,
                Object.prototype.toString.call(navigator), typeof d.get, d.enumerable]""",
        ["quickjail", 1, "en-US", ["en-US"], True, "", "[object Navigator]", "function", True],
    ),
    (
        "navigator_getters_check_their_receiver_and_navigator_cannot_be_constructed",
        """const out = [];
        const get = Object.getOwnPropertyDescriptor(Navigator.prototype, "userAgent").get;
        for (const f of [() => get.call({}), () => new Navigator(), () => new WorkerGlobalScope()])
          try { f(); out.push("no error"); } catch (e) { out.push(e.name); }
        return out""",
        ["TypeError", "TypeError", "TypeError"],
    ),
    (
        "the_global_object_is_a_worker_global_scope_and_an_event_target",
        """return [globalThis instanceof EventTarget, globalThis instanceof WorkerGlobalScope,
                Object.getPrototypeOf(WorkerGlobalScope.prototype) === EventTarget.prototype,
                Object.prototype.toString.call(globalThis),
                Object.prototype.hasOwnProperty.call(globalThis, "addEventListener")]""",
        [True, True, True, "[object WorkerGlobalScope]", False],
    ),
    (
        "listeners_on_the_global_hear_its_events_bare_calls_included",
        """const out = [];
        const f = (e) => out.push([e.type, e.target === globalThis, e.currentTarget === self]);
        addEventListener("ping", f);
        globalThis.addEventListener("ping", () => out.push("second"), { once: true });
        out.push(dispatchEvent(new Event("ping")));
        EventTarget.prototype.dispatchEvent.call(globalThis, new Event("ping"));
        removeEventListener("ping", f);
        self.dispatchEvent(new Event("ping"));
        return out""",
        [["ping", True, True], "second", True, ["ping", True, True]],
    ),
    (
        "report_error_fires_a_cancelable_error_event_with_the_errors_place",
        """let seen;
        addEventListener("error", (e) => {
          seen = [e instanceof ErrorEvent, e.type, e.cancelable, e.isTrusted, e.message,
                  e.filename, e.lineno, e.colno, e.error instanceof RangeError];
          e.preventDefault();
        });
        const err = new RangeError("bad");
        const r = reportError(err);
        return [r, seen]""",
        [
            UNDEFINED,
            [True, "error", True, True, "Uncaught RangeError: bad", "<run_code>", 7, 25, True],
        ],
    ),
    (
        "report_error_of_a_non_error_gives_the_callers_place",
        """let seen;
        addEventListener("error", (e) => { seen = [e.message, e.error, e.filename, e.lineno];
          e.preventDefault(); });
        reportError(42);
        return seen""",
        ["Uncaught 42", 42, "<run_code>", 4],
    ),
    (
        "report_error_needs_an_argument",
        "try { reportError(); } catch (e) { return e.name }",
        "TypeError",
    ),
    (
        "error_event_init_dict_is_converted",
        """const e = new ErrorEvent("error", { message: 5, filename: "a\\ud800", lineno: -1,
          colno: "7", error: null, cancelable: true });
        const d = new ErrorEvent("x");
        return [e.message, e.filename, e.lineno, e.colno, e.error, e.cancelable,
                d.message, d.filename, d.lineno, d.colno, d.error,
                Object.prototype.toString.call(e)]""",
        ["5", "a\ufffd", 4294967295, 7, None, True, "", "", 0, 0, UNDEFINED, "[object ErrorEvent]"],
    ),
    (
        "quota_exceeded_error_is_a_dom_exception_with_quota_and_requested",
        """const e = new QuotaExceededError("full", { quota: 10, requested: 12 });
        const d = new QuotaExceededError();
        return [e.name, e.code, e.message, e.quota, e.requested, e instanceof DOMException,
                e instanceof Error, Object.prototype.toString.call(e), d.message, d.quota,
                d.requested, QuotaExceededError.length]""",
        [
            "QuotaExceededError",
            22,
            "full",
            10,
            12,
            True,
            True,
            "[object QuotaExceededError]",
            "",
            None,
            None,
            0,
        ],
    ),
    (
        "quota_exceeded_error_refuses_bad_numbers",
        """const out = [];
        for (const o of [{ quota: -1 }, { requested: -1 }, { quota: 5, requested: 4 },
                         { quota: NaN }, { requested: Infinity }, 5])
          try { new QuotaExceededError("m", o); out.push("no error"); }
          catch (e) { out.push(e.name); }
        return out""",
        ["RangeError", "RangeError", "RangeError", "TypeError", "TypeError", "TypeError"],
    ),
    (
        # a plain DOMException of that name, as workerd 1.20261117.1 and Node 20 throw
        "get_random_values_over_64k_throws_a_dom_exception_named_quota_exceeded_error",
        """try { crypto.getRandomValues(new Uint8Array(65537)); }
        catch (e) { return [e instanceof QuotaExceededError, e instanceof DOMException, e.name,
                            e.code] }""",
        [False, True, "QuotaExceededError", 22],
    ),
]


@pytest.mark.parametrize(("body", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_the_global_scope_is_a_workers(body: str, expected: object) -> None:
    r = quickjail.run_code_sync(f"export default (() => {{ {body} }})()")
    assert r.status == "success", r.error
    assert r.result == expected
    assert r.logs == []


def test_an_uncancelled_report_error_is_logged_and_the_run_goes_on() -> None:
    r = quickjail.run_code_sync(
        """let n = 0;
        addEventListener("error", () => n++);
        reportError(new TypeError("first"));
        export default ["carried on", n]"""
    )
    assert r.status == "success", r.error
    assert r.result == ["carried on", 1]
    [entry] = r.logs
    assert entry.level == "error"
    assert entry.args[0] == "Uncaught exception (reportError):"
    assert entry.args[1].startswith("TypeError: first")


def test_errors_thrown_by_callbacks_and_listeners_are_error_events_first() -> None:
    r = quickjail.run_code_sync(
        """const seen = [];
        addEventListener("error", (e) => {
          seen.push(e.error.message);
          if (e.error.message !== "listener") e.preventDefault();
        });
        setTimeout(() => { throw new Error("timer"); }, 0);
        queueMicrotask(() => { throw new Error("microtask"); });
        const t = new EventTarget();
        t.addEventListener("x", () => { throw new Error("listener"); });
        t.dispatchEvent(new Event("x"));
        await new Promise((r) => setTimeout(r, 5));
        export default seen""",
        deterministic=True,
    )
    assert r.status == "success", r.error
    assert r.result == ["listener", "microtask", "timer"]
    # only the one no listener cancelled is logged
    [entry] = r.logs
    assert entry.args[0] == "Uncaught exception in an event listener:"


def test_a_throwing_error_listener_is_logged_not_reported_again() -> None:
    r = quickjail.run_code_sync(
        """let calls = 0;
        addEventListener("error", () => { calls++; throw new Error("from the listener"); });
        addEventListener("error", () => { calls++; addEventListener("error", () => calls++); });
        reportError(new Error("reported"));
        export default calls"""
    )
    assert r.status == "success", r.error
    # the listener added while dispatching is not called by that dispatch
    assert r.result == 2
    assert [e.args[0] for e in r.logs] == [
        "Uncaught exception in an event listener:",
        "Uncaught exception (reportError):",
    ]
    assert r.logs[0].args[1].startswith("Error: from the listener")


def test_a_listener_that_reports_in_a_loop_is_stopped_by_the_runs_limits() -> None:
    r = quickjail.run_code_sync(
        """addEventListener("error", (e) => { e.preventDefault(); queueMicrotask(() => {
          throw new Error("again"); }); });
        queueMicrotask(() => { throw new Error("first"); });
        export default 0""",
        fuel=20_000_000,
    )
    assert r.status == "terminated" and r.reason == "fuel"


def test_global_listeners_do_not_survive_into_the_next_run() -> None:
    src = """let n = 0; addEventListener("error", (e) => { n++; e.preventDefault(); });
    reportError(1); export default n"""
    assert [quickjail.run_code_sync(src).result for _ in range(2)] == [1, 1]


def test_a_program_replacing_the_globals_methods_does_not_stop_the_platforms_events() -> None:
    r = quickjail.run_code_sync(
        """const seen = [];
        addEventListener("error", (e) => { seen[seen.length] = e.message; e.preventDefault(); });
        EventTarget.prototype.dispatchEvent = globalThis.dispatchEvent = () => { throw 1; };
        Array.prototype.push = String.prototype.split = RegExp.prototype.exec = () => { throw 2; };
        Object.setPrototypeOf(globalThis, null);
        queueMicrotask(() => { throw "boom"; });
        await null;
        export default seen""",
    )
    assert r.status == "success", r.error
    assert r.result == ["Uncaught boom"]
