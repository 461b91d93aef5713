"""The JSON the CLI prints, and the object ``quickjail run --json`` prints for a result.

:func:`result_to_json` is the CLI's; the MCP server and the agent tools answer
``quickjail.runtime.helpers.RunCodeAnswer``, the same fields without timings. Every value in
it goes through
:func:`quickjail.sandbox.to_json_safe`, so :func:`dumps` can write any result whatever the
program produced (a BigInt past Python's int-digit limit is ``{"$bigint": "0x…"}``).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from quickjail import sandbox
from quickjail.sandbox import to_json_safe

__all__ = ["dumps", "result_to_json"]


def dumps(value: Any) -> str:
    """One line of JSON, non-ASCII text kept as it is (the value must be JSON-safe already)."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def _error_to_json(error: sandbox.ErrorInfo | None) -> dict[str, Any] | None:
    if error is None:
        return None
    return {
        "name": error.name,
        "message": error.message,
        "stack": error.stack,
        "line": error.line,
        "column": error.column,
        "filename": error.filename,
        "value": to_json_safe(error.value),
    }


def result_to_json(result: sandbox.CodeResult) -> dict[str, Any]:
    """The JSON object ``quickjail run --json`` prints for a result.

    Args:
        result: A finished run's result.

    Returns:
        ``{"status", "result", "error", "reason", "reports", "logs", "duration_ms",
        "metrics"}`` with every value passed through :func:`to_json_safe`; ``error`` is
        ``None`` or ``{"name", "message", "stack", "line", "column", "filename", "value"}``
        and each log is ``{"level", "args", "timestamp"}`` (seconds since the epoch).
    """
    return {
        "status": result.status,
        "result": to_json_safe(result.result),
        "error": _error_to_json(result.error),
        "reason": result.reason,
        "reports": [to_json_safe(r) for r in result.reports],
        "logs": [
            {"level": e.level, "args": [to_json_safe(a) for a in e.args], "timestamp": e.timestamp}
            for e in result.logs
        ],
        "duration_ms": result.duration_ms,
        "metrics": to_json_safe(dataclasses.asdict(result.metrics)),
    }
