"""The answer of a ``run_code`` tool: one JSON shape wherever a model runs code.

The MCP server's ``run_code``, the pydantic-ai and LangChain tools and code mode all answer
``{status, result, error, reason, reports, logs}`` (:class:`RunCodeAnswer`; its JSON Schema,
:func:`answer_schema`, is their output schema). Every value in it is JSON
(:func:`quickjail.sandbox.to_json_safe`).
"""

from __future__ import annotations

import copy
from typing import Any, Final, Literal, NotRequired, TypedDict

from quickjail import sandbox

__all__ = ["RunCodeAnswer", "answer_schema", "invalid_answer", "run_code_answer"]


class AnswerError(TypedDict):
    """Why a run failed: the error's ``name`` and ``message``, its 1-based ``line`` and
    ``column`` in the program's source and its ``stack`` when known."""

    name: str
    message: str
    line: int | None
    column: int | None
    stack: str | None


class AnswerLog(TypedDict):
    """One ``console`` call of the program: its ``level`` and its arguments."""

    level: str
    args: list[Any]


class RunCodeAnswer(TypedDict):
    """What a ``run_code`` tool answers (its JSON Schema: :func:`answer_schema`)."""

    status: Literal[
        "success", "error", "link_error", "memory", "terminated", "paused", "invalid_arguments"
    ]
    result: Any
    error: AnswerError | None
    reason: str | None
    reports: list[Any]
    logs: list[AnswerLog]
    calls: NotRequired[list[dict[str, Any]]]
    calls_omitted: NotRequired[int]


_NULLABLE_INT: Final = {"type": ["integer", "null"]}
_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "status": {
            "type": "string",
            "enum": [
                "success",
                "error",
                "link_error",
                "memory",
                "terminated",
                "paused",
                "invalid_arguments",
            ],
        },
        "result": {"description": "The program's result (null unless status is success)."},
        "error": {
            "anyOf": [
                {"type": "null"},
                {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "message": {"type": "string"},
                        "line": _NULLABLE_INT,
                        "column": _NULLABLE_INT,
                        "stack": {"type": ["string", "null"]},
                    },
                    "required": ["name", "message", "line", "column", "stack"],
                    "additionalProperties": False,
                },
            ]
        },
        "reason": {
            "type": ["string", "null"],
            "description": 'Why a terminated run stopped, e.g. "timeout".',
        },
        "reports": {
            "type": "array",
            "items": {},
            "description": "The values passed to report(value), in order.",
        },
        "logs": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"level": {"type": "string"}, "args": {"type": "array", "items": {}}},
                "required": ["level", "args"],
                "additionalProperties": False,
            },
        },
        "calls": {
            "type": "array",
            "items": {"type": "object"},
            "description": "Code mode's call log: each tool call the program made (tool, "
            "arguments with secrets redacted, status, duration_s, approval decision).",
        },
        "calls_omitted": {
            "type": "integer",
            "description": "Entries of the call log left out to keep the thread in its quota.",
        },
    },
    "required": ["status", "result", "error", "reason", "reports", "logs"],
    "additionalProperties": False,
}


def answer_schema() -> dict[str, Any]:
    """The JSON Schema of :class:`RunCodeAnswer` (a fresh copy): the output schema of every
    ``run_code`` tool (no ``$ref``, so every consumer reads it)."""
    return copy.deepcopy(_SCHEMA)


def run_code_answer(result: sandbox.CodeResult) -> RunCodeAnswer:
    """A finished run's answer (a :class:`RunCodeAnswer` as JSON data).

    Args:
        result: The run's result.
    """
    error = result.error
    return {
        "status": result.status,
        "result": sandbox.to_json_safe(result.result),
        "error": None
        if error is None
        else {
            "name": error.name,
            "message": error.message,
            "line": error.line,
            "column": error.column,
            "stack": error.stack,
        },
        "reason": result.reason,
        "reports": [sandbox.to_json_safe(r) for r in result.reports],
        "logs": [
            {"level": e.level, "args": [sandbox.to_json_safe(a) for a in e.args]}
            for e in result.logs
        ],
    }


def invalid_answer(name: str, message: str) -> RunCodeAnswer:
    """The answer to a malformed call: ``status == "invalid_arguments"``, nothing ran.

    Args:
        name: The error's name, e.g. ``"ValueError"``.
        message: What is wrong with the call and how to fix it.
    """
    return {
        "status": "invalid_arguments",
        "result": None,
        "error": {"name": name, "message": message, "line": None, "column": None, "stack": None},
        "reason": None,
        "reports": [],
        "logs": [],
    }
