"""Model tool calls in, results out: OpenAI (Responses, Chat) and Anthropic shapes."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from ._arguments import (
    ArgumentsError,
    ArgumentsSyntaxError,
    loads_arguments,
    plain_arguments,
)
from ._result import AttachmentRef, ToolResult
from .errors import ProviderFormatError

__all__ = ["ParsedCall", "ResultFormat", "parse_call", "render_results"]

ResultFormat = Literal["openai-responses", "openai-chat", "anthropic"]
_RESULT_FORMATS: Final = ("openai-responses", "openai-chat", "anthropic")


@dataclass(frozen=True, slots=True)
class ParsedCall:
    """A tool call in our own terms; ``error`` is set when it could not be understood."""

    call_id: str
    name: str
    arguments: dict[str, Any] | None
    raw_arguments: Any = None
    error: str | None = None


def _new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


def parse_call(call: object) -> ParsedCall:
    """Read one call in OpenAI Responses, OpenAI Chat, Anthropic or the neutral shape.

    The neutral shape is ``{"id", "name", "arguments"}`` with no ``type`` key, ``arguments``
    being an object or its JSON text.

    Accepts mappings and SDK objects (anything with ``model_dump``). Never raises: a call that
    cannot be read, names nothing or carries arguments that are not plain JSON (invalid text,
    ``NaN``, nesting or integers past the limits of :mod:`._arguments`) gets ``error`` set.
    Ids and names are made storable (a lone surrogate becomes a ``\\udXXX`` escape).
    """
    try:
        dump = getattr(call, "model_dump", None)
        if callable(dump):
            call = dump()
    except Exception as exc:
        error = f"a tool call that cannot be read ({type(exc).__name__})"
        return ParsedCall(_new_id("call"), "", None, error=error)
    if not isinstance(call, Mapping):
        return ParsedCall(_new_id("call"), "", None, error="a tool call must be a JSON object")
    function = call.get("function")
    if call.get("type") == "function_call":
        call_id, name, raw = (
            call.get("call_id") or call.get("id"),
            call.get("name"),
            call.get("arguments"),
        )
    elif call.get("type") == "tool_use":
        call_id, name, raw = call.get("id"), call.get("name"), call.get("input")
    elif isinstance(function, Mapping):
        call_id, name, raw = call.get("id"), function.get("name"), function.get("arguments")
    elif "type" not in call and "name" in call and "arguments" in call:
        # the neutral shape other frameworks emit: {id, name, arguments (object or JSON text)}
        call_id, name, raw = call.get("id"), call.get("name"), call.get("arguments")
    else:
        name = call.get("name")
        return ParsedCall(
            _text(call.get("id") or call.get("call_id")) or _new_id("call"),
            _storable(name) if isinstance(name, str) else "",
            None,
            error="unrecognized tool call shape (expected OpenAI Responses/Chat, Anthropic or "
            "{id, name, arguments})",
        )
    call_id = _text(call_id) or _new_id("call")
    if not isinstance(name, str) or not name:
        return ParsedCall(call_id, "", None, _storable_raw(raw), "the tool call names no tool")
    name = _storable(name)
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return ParsedCall(call_id, name, {}, raw)
    try:
        if isinstance(raw, str):
            value = loads_arguments(raw, "arguments")
        else:
            value = plain_arguments(raw, "arguments")
    except ArgumentsSyntaxError as exc:
        error = f"invalid JSON arguments for tool {name!r}: {exc}"
        return ParsedCall(call_id, name, None, raw, error)
    except ArgumentsError as exc:
        error = f"invalid arguments for tool {name!r}: {exc}"
        return ParsedCall(call_id, name, None, _storable_raw(raw), error)
    if not isinstance(value, dict):
        shown = type(value).__name__
        return ParsedCall(
            call_id,
            name,
            None,
            value,
            f"arguments for tool {name!r} must be an object, got {shown}",
        )
    return ParsedCall(call_id, name, value, raw if isinstance(raw, str) else value)


def _storable(text: str) -> str:
    """``text`` with lone surrogates (no UTF-8 form, so not storable) as ``\\udXXX``."""
    if text.isascii():
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _text(value: object) -> str:
    """An id as text: ``""`` for nothing, or for a value that has no text form."""
    if not value:
        return ""
    try:
        return _storable(value if isinstance(value, str) else str(value))
    except Exception:  # e.g. an integer past CPython's digit limit
        return ""


def _storable_raw(raw: object) -> Any:
    """What the ``tool_call`` message keeps of arguments that were refused."""
    if raw is None or isinstance(raw, str):
        return raw
    try:
        return plain_arguments(raw)
    except ArgumentsError:
        return None


def result_text(result: ToolResult) -> str:
    """The text a model sees for a result: the value (JSON unless a string) or the error."""
    if result.status == "error":
        text = f"Error: {result.error}"
    elif isinstance(result.result, str):
        text = result.result
    else:
        text = json.dumps(result.result, ensure_ascii=False)
    refs = [a for a in result.attachments if isinstance(a, AttachmentRef)]
    if refs:
        listed = "\n".join(f"- {r.path} ({r.mime_type}, {r.size} bytes)" for r in refs)
        text = f"{text}\n\nAttachments:\n{listed}"
    return text


def render_results(results: Iterable[ToolResult], format: ResultFormat) -> list[dict[str, Any]]:
    """Render results as the provider expects them back.

    Args:
        results: Results from ``Thread.execute_tool_calls`` (they carry their ``call_id``).
        format: ``"openai-responses"`` (``function_call_output`` items), ``"openai-chat"``
            (``role: tool`` messages) or ``"anthropic"`` (``tool_result`` content blocks, to
            put in one user message).

    Raises:
        ProviderFormatError: Unknown format, or a result without ``call_id``.
    """
    if format not in _RESULT_FORMATS:
        raise ProviderFormatError(f"unknown format {format!r}; expected one of {_RESULT_FORMATS}")
    rendered: list[dict[str, Any]] = []
    for result in results:
        if not result.call_id:
            raise ProviderFormatError(
                f"result of tool {result.tool_name!r} has no call_id; render results returned "
                "by execute_tool_calls"
            )
        text = result_text(result)
        if format == "openai-responses":
            rendered.append(
                {"type": "function_call_output", "call_id": result.call_id, "output": text}
            )
        elif format == "openai-chat":
            rendered.append({"role": "tool", "tool_call_id": result.call_id, "content": text})
        else:
            rendered.append(
                {
                    "type": "tool_result",
                    "tool_use_id": result.call_id,
                    "content": text,
                    "is_error": result.status == "error",
                }
            )
    return rendered
