"""A global namespace with a fallback (sandbox.host.NAMESPACE_FALLBACK), through the bridge."""

from __future__ import annotations

from typing import Any

import pytest

import quickjail
from quickjail.sandbox.host import NAMESPACE_FALLBACK

pytestmark = pytest.mark.timeout(60)


async def _fallback(name: Any, *args: Any) -> str:
    return f"fallback {name} {list(args)}"


def test_a_missing_name_calls_the_fallback_with_the_name_and_arguments() -> None:
    ns = {"known": lambda x: x * 2, NAMESPACE_FALLBACK: _fallback}
    src = """
    export default [await ns.known(21), await ns.other(1, "two"), typeof ns.known,
                    "other" in ns, Object.keys(ns), typeof ns.then, typeof ns.toString,
                    Object.isFrozen(Object.getPrototypeOf(ns)) || Object.isFrozen(ns)];
    """
    r = quickjail.run_code_sync(src, globals={"ns": ns})
    assert r.status == "success", r.error
    assert r.result == [
        42,
        "fallback other [1, 'two']",
        "function",
        False,
        ["known"],
        "undefined",
        "function",
        True,
    ]


def test_a_namespace_without_the_key_is_left_as_it_is() -> None:
    r = quickjail.run_code_sync("export default typeof ns.missing", globals={"ns": {"a": 1}})
    assert r.result == "undefined"


def test_the_fallback_key_is_invisible_and_a_nested_one_is_plain_data() -> None:
    src = "export default [Object.keys(ns), typeof ns.inner.nope]"
    ns = {"inner": {NAMESPACE_FALLBACK: _fallback}, NAMESPACE_FALLBACK: _fallback}
    r = quickjail.run_code_sync(src, globals={"ns": ns})
    assert r.result == [["inner"], "undefined"], r.error
