"""The guest's ``fetch``: rejecting without a capability, and how the capability stays hidden.

Through the public API (``quickjail.run_code_sync``, ``bridge.run_code``). The host side's
checks are in ``test_bridge_fetch_host.py``.
"""

from __future__ import annotations

import quickjail
from quickjail import bridge

NO_BRIDGE = "fetch is not available in this sandbox: the host gave it no bridge.Fetch"


def test_fetch_without_a_capability_rejects_with_a_type_error_a_program_can_catch() -> None:
    r = quickjail.run_code_sync(
        """
        let why;
        try { await fetch("https://example.com/", { method: "POST", body: "x" }); }
        catch (e) { why = [e instanceof TypeError, e.name, e.message]; }
        export default why
        """
    )
    assert r.status == "success", r.error
    assert r.result == [True, "TypeError", NO_BRIDGE]


def test_fetch_has_the_web_idl_shape_of_a_global_operation() -> None:
    r = quickjail.run_code_sync(
        """
        const d = Object.getOwnPropertyDescriptor(globalThis, "fetch");
        const p = fetch("https://example.com/");
        p.catch(() => {});
        export default [typeof d.value, d.writable, d.enumerable, d.configurable,
                        fetch.name, fetch.length, p instanceof Promise]
        """
    )
    assert r.result == ["function", True, False, True, "fetch", 1, True]


def test_the_capabilitys_host_functions_are_not_reachable_from_the_program() -> None:
    cap = bridge.Fetch(allow=["example.com"])
    r = bridge.run_code_sync(
        """
        const names = Object.getOwnPropertyNames(globalThis).filter(
          (n) => n.startsWith("\\x02") || n === "open" || n === "request");
        export default [names, typeof fetch, typeof globalThis["\\x02fetch"]]
        """,
        globals={"fetch": cap},
    )
    assert r.status == "success", r.error
    assert r.result == [[], "function", "undefined"]


def test_a_program_that_replaces_fetch_gets_only_its_own_function() -> None:
    r = quickjail.run_code_sync(
        """
        globalThis.fetch = async () => "mine";
        export default await fetch("https://example.com/")
        """
    )
    assert r.result == "mine"
