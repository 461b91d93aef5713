"""What a tool result may be on the MCP stdio stream: cut to ``--max-result-chars``, and one
message never larger than :data:`MAX_MESSAGE_BYTES`.

Clients on the official TypeScript SDK refuse a stdio message over 10 MiB and close the
connection, so every later call of the session fails. A result is therefore cut to the
server's ``max_result_chars`` (characters of its JSON text), with a note saying so where the
cut is; then the whole message is measured as it will be sent and, while it is still too
large, images are left out (listed in the text) and the limit halved.

A ``run_code`` answer (:class:`~quickjail.runtime.helpers.RunCodeAnswer`) is cut inside its
fields so it still matches its output schema: the program's ``result`` becomes the start of
its JSON as a string, ``reports`` one such string, ``logs`` the entries that fit and one
entry with the start of the rest, the error's strings their starts. Both copies MCP sends of
a structured result (``structuredContent`` and its JSON in a text block, as the protocol
asks) then carry the same cut answer.
"""

from __future__ import annotations

import json
from typing import Any, Final

import mcp.types as types

__all__ = [
    "DEFAULT_MAX_RESULT_CHARS",
    "MAX_MESSAGE_BYTES",
    "MIN_MAX_RESULT_CHARS",
    "answer_result",
    "cap_answer",
    "cut_text",
    "fit_message",
    "message_bytes",
]

#: ``--max-result-chars`` when not given: a result's JSON text is cut past this many characters.
DEFAULT_MAX_RESULT_CHARS: Final = 1_000_000
#: The smallest ``--max-result-chars`` (room for a cut's note and the answer's other fields).
MIN_MAX_RESULT_CHARS: Final = 1_000
#: The largest message sent: the TypeScript SDK's stdio client refuses one over 10 MiB.
MAX_MESSAGE_BYTES: Final = 9 * 2**20
_CUT_FIELDS: Final = ("result", "reports", "logs", "error")


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def _note(total: int, kept: int, limit: int) -> str:
    return (
        f"… [cut by the MCP server: {total - kept} of {total} characters not sent; "
        f"--max-result-chars {limit}]"
    )


def cut_text(text: str, max_chars: int, limit: int | None = None) -> str:
    """``text`` itself when it has at most ``max_chars`` characters, else its start and a
    note of how much was cut, together at most ``max_chars`` (or just the note).

    Args:
        text: The text.
        max_chars: Characters the result may have.
        limit: The ``--max-result-chars`` the note names (``max_chars`` by default).
    """
    if len(text) <= max_chars:
        return text
    shown = max_chars if limit is None else limit
    keep = max(max_chars - len(_note(len(text), max_chars, shown)), 0)
    return text[:keep] + _note(len(text), keep, shown)


def _cut_json_string(value: Any, max_json_chars: int, limit: int) -> str:
    """``value`` (a string, or any JSON value as its JSON text) cut so that its JSON, as a
    string, has at most ``max_json_chars`` characters (escapes included), note included."""
    text = value if isinstance(value, str) else _dumps(value)
    keep = max(max_json_chars - len(_note(len(text), max_json_chars, limit)) - 2, 0)
    while True:
        cut = text[:keep] + _note(len(text), keep, limit)
        excess = len(_dumps(cut)) - max_json_chars
        if excess <= 0 or keep == 0:
            return cut
        keep = max(keep - excess, 0)  # each character dropped shortens the JSON by one or more


def _cut_logs(logs: list[Any], share: int, limit: int) -> list[Any]:
    """The whole log entries that fit in ``share`` characters of JSON, then one entry with
    the start of the rest's JSON."""
    kept: list[Any] = []
    used = 2
    reserve = min(share // 2, 400)
    for i, entry in enumerate(logs):
        size = len(_dumps(entry)) + 2
        if used + size > share - reserve:
            rest = logs[i:]
            room = max(share - used - len('{"level": "warn", "args": []}') - 2, 0)
            kept.append({"level": "warn", "args": [_cut_json_string(rest, room, limit)]})
            break
        kept.append(entry)
        used += size
    return kept


def _cut_error(error: Any, share: int, limit: int) -> Any:
    """The error with its strings (``stack``, ``message``, ``name``) cut to fit ``share``."""
    if not isinstance(error, dict):
        return _cut_json_string(error, share, limit)
    out = dict(error)
    for key in ("stack", "message", "name"):
        excess = len(_dumps(out)) - share
        value = out.get(key)
        if excess <= 0:
            break
        if isinstance(value, str):
            room = max(len(_dumps(value)) - excess, 0)
            out[key] = _cut_json_string(value, room, limit)
    return out


def _cut_field(key: str, value: Any, share: int, limit: int) -> Any:
    if key == "result":
        return _cut_json_string(value, share, limit)
    if key == "reports":
        return [_cut_json_string(value, max(share - 2, 0), limit)]
    if key == "logs" and isinstance(value, list):
        return _cut_logs(value, share, limit)
    return _cut_error(value, share, limit)


def cap_answer(answer: dict[str, Any], max_chars: int, limit: int | None = None) -> dict[str, Any]:
    """A ``run_code`` answer whose JSON text has at most about ``max_chars`` characters.

    The fields that fit a fair share of the room keep whole; each other one is cut to its
    share (see the module docstring), with a note of what was cut. An answer that fits is
    returned as it is.

    Args:
        answer: A :class:`~quickjail.runtime.helpers.RunCodeAnswer` (JSON data).
        max_chars: Characters of JSON the answer may have.
        limit: The ``--max-result-chars`` the notes name (``max_chars`` by default).
    """
    shown = max_chars if limit is None else limit
    total = len(_dumps(answer))
    if total <= max_chars:
        return answer
    keys = [k for k in _CUT_FIELDS if k in answer]
    sizes = {k: len(_dumps(answer[k])) for k in keys}
    room = max(max_chars - (total - sum(sizes.values())), 0)
    out = dict(answer)
    left = len(keys)
    for key in sorted(keys, key=lambda k: sizes[k]):  # smallest first: water-filling
        share = room // left
        left -= 1
        if sizes[key] > share:
            out[key] = _cut_field(key, answer[key], share, shown)
        room -= min(sizes[key], len(_dumps(out[key])))
        room = max(room, 0)
    return out


def message_bytes(result: types.CallToolResult) -> int:
    """Bytes of UTF-8 JSON the result takes in its message, as the SDK will send it."""
    return len(result.model_dump_json(by_alias=True, exclude_unset=True).encode())


def answer_result(
    answer: dict[str, Any], is_error: bool, max_result_chars: int
) -> types.CallToolResult:
    """A ``run_code`` answer as a ``CallToolResult``: the cut answer as ``structuredContent``
    (the tool declares it as its output schema) and as its JSON text; within
    :data:`MAX_MESSAGE_BYTES` whatever the characters (the limit is halved until it fits)."""
    budget = max_result_chars
    while True:
        capped = cap_answer(answer, budget, max_result_chars)
        result = types.CallToolResult(
            content=[types.TextContent(type="text", text=_dumps(capped))],
            structured_content=capped,
            is_error=is_error,
        )
        if message_bytes(result) <= MAX_MESSAGE_BYTES or budget <= MIN_MAX_RESULT_CHARS:
            return result
        budget //= 2


def fit_message(
    rendered: dict[str, Any],
    *,
    max_result_chars: int,
    structured: bool,
    answer: bool,
) -> types.CallToolResult:
    """A runtime tool's rendered ``CallToolResult`` dict, cut to fit (module docstring).

    Args:
        rendered: ``render_content(..., "mcp")``'s dict: text first, then images,
            ``isError`` and ``structuredContent`` for an object value.
        max_result_chars: The server's ``--max-result-chars``.
        structured: Whether the tool declares an output schema; ``structuredContent`` is sent
            only then (the text carries the value for every other tool: sent once), and for
            a failure only if it is a ``run_code`` answer: another failure's value need not
            match the schema, and a client holding it to the schema would refuse the result.
        answer: Whether the value is a ``run_code`` answer (code mode's), cut inside it.
    """
    content: list[dict[str, Any]] = list(rendered.get("content") or [])
    is_error = bool(rendered.get("isError"))
    sent = structured and (answer or not is_error)
    value = rendered.get("structuredContent") if sent else None
    text = str(content[0].get("text", "")) if content and content[0].get("type") == "text" else ""
    images = [c for c in content if c.get("type") == "image"]
    budget = max_result_chars
    while True:
        out_value, out_text, out_error = value, text, is_error
        if value is not None and answer:
            out_value = cap_answer(value, budget, max_result_chars)
            if out_value is not value and not is_error:
                out_text = _dumps(out_value)
        elif value is not None and len(_dumps(value)) > budget:
            # a cut value would not match the tool's output schema: its start goes as text
            out_value, out_error = None, True
            out_text = (
                "The result is too large to send whole over MCP, so it is not sent as "
                f"structured content; the start of it:\n{_dumps(value)}"
            )
        out_text = cut_text(out_text, budget, max_result_chars)
        kept = list(images)
        while True:
            result = _result(out_text, kept, images, out_value, out_error)
            if message_bytes(result) <= MAX_MESSAGE_BYTES or not kept:
                break
            kept.pop()
        if message_bytes(result) <= MAX_MESSAGE_BYTES or budget <= MIN_MAX_RESULT_CHARS:
            return result
        budget //= 2


def _result(
    text: str,
    kept: list[dict[str, Any]],
    images: list[dict[str, Any]],
    value: Any,
    is_error: bool,
) -> types.CallToolResult:
    left_out = len(images) - len(kept)
    if left_out:
        text += (
            f"\n\n[{left_out} of {len(images)} images not sent: the message would be over "
            f"{MAX_MESSAGE_BYTES // 2**20} MiB]"
        )
    data: dict[str, Any] = {
        "content": [{"type": "text", "text": text}, *kept],
        "isError": is_error,
    }
    if value is not None:
        data["structuredContent"] = value
    return types.CallToolResult.model_validate(data)
