"""AbortController and AbortSignal behave as WHATWG DOM section 3.1 says.

Each case is a program whose default export is what the spec makes of it.
"""

from __future__ import annotations

import pytest

import quickjail

CASES: list[tuple[str, str, object]] = [
    (
        "a_new_signal_is_not_aborted",
        """const c = new AbortController();
        return [c.signal.aborted, c.signal.reason === undefined, c.signal instanceof EventTarget,
                c.signal === c.signal, c.signal.onabort]""",
        [False, True, True, True, None],
    ),
    (
        "abort_without_a_reason_gives_an_abort_error",
        """const c = new AbortController(); c.abort();
        const r = c.signal.reason;
        return [c.signal.aborted, r instanceof DOMException, r instanceof Error, r.name, r.code,
                r.code === DOMException.ABORT_ERR]""",
        [True, True, True, "AbortError", 20, True],
    ),
    (
        "abort_keeps_its_reason_and_the_first_one_wins",
        """const c = new AbortController(); c.abort("first"); c.abort("second");
        const d = new AbortController(); d.abort(undefined);
        const e = new AbortController(); e.abort(null);
        return [c.signal.reason, d.signal.reason.name, e.signal.reason]""",
        ["first", "AbortError", None],
    ),
    (
        "the_abort_event_fires_once_and_is_trusted",
        """const c = new AbortController(), out = [];
        c.signal.addEventListener("abort", (e) => out.push(
          [e.type, e.isTrusted, e.target === c.signal, e.cancelable, c.signal.aborted]));
        c.abort(); c.abort();
        return out""",
        [["abort", True, True, False, True]],
    ),
    (
        "onabort_is_an_event_handler_attribute",
        """const c = new AbortController(), out = [];
        c.signal.addEventListener("abort", () => out.push("first"));
        c.signal.onabort = function (e) { out.push(["handler", this === c.signal, e.type]); };
        c.signal.addEventListener("abort", () => out.push("last"));
        c.signal.onabort = function () { out.push("replaced, same place"); };
        const kept = typeof c.signal.onabort;
        c.abort();
        const d = new AbortController();
        d.signal.onabort = () => out.push("never"); d.signal.onabort = null;
        d.signal.onabort = 5;
        d.abort();
        return [out, kept, d.signal.onabort]""",
        [["first", "replaced, same place", "last"], "function", None],
    ),
    (
        "throw_if_aborted_throws_the_reason",
        """const c = new AbortController(); c.signal.throwIfAborted();
        const reason = { why: 1 }; c.abort(reason);
        try { c.signal.throwIfAborted(); } catch (e) { return e === reason; }""",
        True,
    ),
    (
        "abort_signal_abort_is_already_aborted_without_an_event",
        """const s = AbortSignal.abort(), t = AbortSignal.abort(42);
        return [s.aborted, s.reason.name, t.reason]""",
        [True, "AbortError", 42],
    ),
    (
        "signals_are_not_constructible",
        """try { new AbortSignal(); } catch (e) { return e.name; }""",
        "TypeError",
    ),
    (
        "a_listener_signal_removes_the_listener",
        """const t = new EventTarget(), c = new AbortController(), out = [];
        t.addEventListener("x", () => out.push(1), { signal: c.signal });
        t.dispatchEvent(new Event("x")); c.abort(); t.dispatchEvent(new Event("x"));
        t.addEventListener("x", () => out.push(2), { signal: AbortSignal.abort() });
        t.dispatchEvent(new Event("x"));
        return out""",
        [1],
    ),
    (
        "any_follows_the_first_source_to_abort",
        """const a = new AbortController(), b = new AbortController();
        const s = AbortSignal.any([a.signal, b.signal]), out = [];
        s.addEventListener("abort", () => out.push(["any", s.reason]));
        a.signal.addEventListener("abort", () => out.push(["a", s.aborted]));
        b.abort("b's reason"); a.abort("a's reason");
        return [s.aborted, s.reason, out]""",
        [True, "b's reason", [["any", "b's reason"], ["a", True]]],
    ),
    (
        "any_with_an_aborted_input_is_aborted_with_its_reason",
        """const s = AbortSignal.any([new AbortController().signal, AbortSignal.abort("x"),
                                      AbortSignal.abort("y")]);
        return [s.aborted, s.reason]""",
        [True, "x"],
    ),
    (
        "any_of_any_follows_the_original_sources",
        """const a = new AbortController();
        const inner = AbortSignal.any([a.signal]), outer = AbortSignal.any([inner]);
        a.abort("r");
        return [inner.aborted, outer.aborted, outer.reason]""",
        [True, True, "r"],
    ),
    (
        "any_of_nothing_never_aborts_and_checks_its_members",
        """const s = AbortSignal.any([]), out = [s.aborted];
        for (const f of [() => AbortSignal.any([{}]), () => AbortSignal.any(5),
                         () => AbortSignal.any()])
          try { f(); out.push("no error"); } catch (e) { out.push(e.name); }
        return out""",
        [False, "TypeError", "TypeError", "TypeError"],
    ),
    (
        "delays_out_of_range_are_type_errors",
        """const out = [];
        for (const v of [-1, NaN, Infinity, 2 ** 53])
          try { AbortSignal.timeout(v); out.push("no error"); } catch (e) { out.push(e.name); }
        return out""",
        ["TypeError"] * 4,
    ),
    (
        "the_globals_are_web_idl_shaped",
        """return [Object.prototype.toString.call(new AbortController()),
                Object.prototype.toString.call(AbortSignal.abort()),
                Object.getOwnPropertyDescriptor(globalThis, "AbortController").enumerable,
                Object.getOwnPropertyDescriptor(AbortController.prototype, "abort").enumerable]""",
        ["[object AbortController]", "[object AbortSignal]", False, True],
    ),
]


@pytest.mark.parametrize(("body", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_abort_follows_the_dom_standard(body: str, expected: object) -> None:
    r = quickjail.run_code_sync(f"export default (() => {{ {body} }})()")
    assert r.status == "success", r.error
    assert r.result == expected


def test_an_uncaught_abort_error_is_the_runs_error_with_its_name() -> None:
    r = quickjail.run_code_sync(
        "const c = new AbortController(); c.abort(); c.signal.throwIfAborted()"
    )
    assert r.status == "error" and r.error is not None
    assert (r.error.name, r.error.message) == ("AbortError", "This operation was aborted")
    assert r.error.line == 1


# Needs the timers of web/timers.js (native.setTimer): passes once they are merged.
@pytest.mark.parametrize("deterministic", [False, True], ids=["real", "deterministic"])
def test_abort_signal_timeout_aborts_with_a_timeout_error(deterministic: bool) -> None:
    r = quickjail.run_code_sync(
        """const s = AbortSignal.timeout(5), seen = [s.aborted];
        await new Promise((resolve) => s.addEventListener("abort", resolve));
        export default [...seen, s.aborted, s.reason instanceof DOMException, s.reason.name,
                        s.reason.code]""",
        deterministic=deterministic,
        timeout=60,
    )
    assert r.status == "success", r.error
    assert r.result == [False, True, True, "TimeoutError", 23]
