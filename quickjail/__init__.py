"""quickjail's command line, its JSON conversion, and the isolation stress test.

``quickjail run FILE`` runs one program with the capabilities chosen by flags and prints its
result (``--json`` for one machine-readable object); ``quickjail mcp`` serves a ``run_code``
tool over stdio for MCP-capable agent hosts (needs the ``mcp`` extra); ``quickjail stress``
attacks a bridge configuration and checks the host's invariants (needs the ``stress`` extra).
``quickjail --help`` lists the flags and the exit codes.

The JSON conversion the CLI and the MCP server share is public, for other embedders:

    >>> from quickjail import to_json_safe
    >>> to_json_safe({"data": b"hi", "tags": frozenset({"b", "a"})})
    {'data': {'$bytes': 'aGk='}, 'tags': ['a', 'b']}

So is the stress test, for test suites (the ``quickjail_stress`` pytest fixture wraps it):

    >>> from quickjail import run_stress
    >>> report = run_stress({"globals": {"add": lambda a, b: a + b}})  # doctest: +SKIP
    >>> report.assert_ok()  # doctest: +SKIP

Names are imported on first use, so ``import quickjail`` (and the pytest plugin) stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from quickjail._cli import main, result_to_json, to_json_safe
    from quickjail._stress import StressReport, Violation, run_stress

__all__ = ["StressReport", "Violation", "main", "result_to_json", "run_stress", "to_json_safe"]

_WHERE = {
    "main": "quickjail._cli",
    "result_to_json": "quickjail._cli",
    "to_json_safe": "quickjail._cli",
    "StressReport": "quickjail._stress",
    "Violation": "quickjail._stress",
    "run_stress": "quickjail._stress",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'quickjail' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*__all__, *(n for n in globals() if n.startswith("__"))})
