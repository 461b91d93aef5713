"""What a tool returns: :class:`ToolResult` and its attachments."""

from __future__ import annotations

import base64
import binascii
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ._mime import check_mime_type

__all__ = ["AttachmentRef", "ToolAttachment", "ToolResult", "check_base64"]


def check_base64(value: str) -> str:
    """Return ``value`` if it is standard base64 (padded, no other characters).

    Raises:
        ValueError: Naming why it is not.
    """
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"data must be base64: {exc}") from None
    return value


class ToolAttachment(BaseModel):
    """A new file a tool hands back (an image, a report): stored by the runtime, never resized.

    Attributes:
        name: File name suggested by the tool; sanitized before it is stored.
        mime_type: MIME type, e.g. ``"image/png"`` (checked, type and subtype lower-cased).
        data: The content, base64-encoded (validated on construction).
        width: Pixel width for images, if known.
        height: Pixel height for images, if known.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    mime_type: str
    data: str
    width: int | None = None
    height: int | None = None

    _check_mime = field_validator("mime_type")(check_mime_type)
    _check_data = field_validator("data")(check_base64)

    @classmethod
    def from_bytes(
        cls,
        name: str,
        mime_type: str,
        content: bytes,
        *,
        width: int | None = None,
        height: int | None = None,
    ) -> Self:
        """Build an attachment from raw bytes (encodes them as base64)."""
        data = base64.b64encode(content).decode("ascii")
        return cls(name=name, mime_type=mime_type, data=data, width=width, height=height)

    def content(self) -> bytes:
        """Return the decoded bytes."""
        return base64.b64decode(self.data)


class AttachmentRef(BaseModel):
    """A stored attachment: a file of the thread, referenced instead of inlined.

    Attributes:
        id: Stable identifier of the stored file.
        type: Always ``"file"``.
        path: Virtual path in the thread's files (under ``/attachments/``).
        name: The sanitized file name.
        mime_type: MIME type (checked, type and subtype lower-cased).
        size: Size in bytes.
        width: Pixel width, if known.
        height: Pixel height, if known.
        description: Free text for the model or the UI.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    type: Literal["file"] = "file"
    path: str
    name: str
    mime_type: str
    size: int
    width: int | None = None
    height: int | None = None
    description: str | None = None

    _check_mime = field_validator("mime_type")(check_mime_type)


class ToolResult(BaseModel):
    """The outcome of one tool call.

    Attributes:
        status: ``"success"`` or ``"error"``; ``"waiting"`` (made by the runtime only) for a
            call that waits for approval, ``result`` then ``{"approval_ids": [...],
            "message": ...}``.
        result: JSON-compatible value for the model (success), or extra detail (error).
        error: Human-readable error message when ``status == "error"``.
        stack: Python traceback of a tool that raised (secrets redacted).
        attachments: New :class:`ToolAttachment` s, or :class:`AttachmentRef` s once stored.
        call_id: Set by the runtime: the id of the model's tool call this answers.
        tool_name: Set by the runtime: the name of the tool that was called.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    status: Literal["success", "error", "waiting"]
    result: Any = None
    error: str | None = None
    stack: str | None = None
    attachments: list[ToolAttachment | AttachmentRef] = Field(default_factory=list)
    call_id: str | None = None
    tool_name: str | None = None

    @model_validator(mode="after")
    def _error_has_message(self) -> Self:
        if self.status == "error" and not self.error:
            raise ValueError("an error ToolResult needs a non-empty error message")
        return self

    @classmethod
    def success(
        cls, result: Any = None, *, attachments: list[ToolAttachment | AttachmentRef] | None = None
    ) -> Self:
        """Build a successful result."""
        return cls(status="success", result=result, attachments=attachments or [])

    @classmethod
    def failure(cls, error: str, *, result: Any = None, stack: str | None = None) -> Self:
        """Build an error result."""
        return cls(status="error", error=error, result=result, stack=stack)

    @classmethod
    def waiting(cls, approval_ids: list[str], message: str) -> Self:
        """A call that waits for approval (the runtime's; a tool returning one fails)."""
        return cls(status="waiting", result={"approval_ids": approval_ids, "message": message})

    @property
    def ok(self) -> bool:
        """True when ``status == "success"``."""
        return self.status == "success"
