"""A stored message of a thread."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["Message", "MessageKind", "Role"]

Role = Literal["system", "user", "assistant", "tool"]
MessageKind = Literal["text", "tool_call", "tool_result"]


class Message(BaseModel):
    """One message of a thread, as stored (secrets already redacted).

    Attributes:
        id: Position in the database; increases with time.
        thread_id: The thread it belongs to.
        role: ``"system"``, ``"user"``, ``"assistant"`` or ``"tool"``.
        kind: ``"text"``; ``"tool_call"`` (content ``{"name", "arguments"}``); or
            ``"tool_result"`` (content ``{"status", "result", "error", "stack", "attachments"}``).
        content: JSON-compatible content.
        tool_call_id: The call a ``tool_call``/``tool_result`` belongs to.
        tool_name: The tool called.
        parent_call_id: For calls made from code mode, the ``run_code`` call that made them.
        created_at: Unix time.
    """

    model_config = ConfigDict(frozen=True)

    id: int
    thread_id: str
    role: Role
    kind: MessageKind
    content: Any
    tool_call_id: str | None = None
    tool_name: str | None = None
    parent_call_id: str | None = None
    created_at: float
