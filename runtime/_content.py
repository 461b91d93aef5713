"""Content a model sees of a tool result: :class:`TextContent` and :class:`ImageContent`.

:func:`render_content` renders results for a provider with image attachments as that
provider's image content, not as a listed path: OpenAI Responses (``input_image`` items in the
``function_call_output``), OpenAI Chat (tool messages carry only text, so the images follow in
one ``user`` message after the tool messages), Anthropic (``image`` blocks inside the
``tool_result``) and MCP (``image`` content of a ``CallToolResult``). An image is sent when its
MIME type is one every provider takes (PNG, JPEG, GIF, WebP) and it is at most
``MAX_IMAGE_BYTES``; any other attachment is listed in the text.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal, Self, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ._calls import result_text
from ._mime import check_mime_type
from ._result import AttachmentRef, ToolAttachment, ToolResult, check_base64
from .errors import ProviderFormatError, ThreadFileNotFoundError

if TYPE_CHECKING:
    from ._state import ThreadState

__all__ = [
    "IMAGE_MIME_TYPES",
    "MAX_IMAGE_BYTES",
    "Content",
    "ContentFormat",
    "ImageContent",
    "TextContent",
    "ToolContent",
    "render_content",
    "result_content",
]

ContentFormat = Literal["openai-responses", "openai-chat", "anthropic", "mcp"]
_FORMATS: Final = ("openai-responses", "openai-chat", "anthropic", "mcp")
IMAGE_MIME_TYPES: Final = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
MAX_IMAGE_BYTES: Final = 5 * 2**20


class TextContent(BaseModel):
    """Text for the model."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["text"] = "text"
    text: str


class ImageContent(BaseModel):
    """An image for the model: ``data`` (checked to be base64) of ``mime_type`` (checked to be
    a MIME type)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["image"] = "image"
    data: str
    mime_type: str

    _check_mime = field_validator("mime_type")(check_mime_type)
    _check_data = field_validator("data")(check_base64)

    @classmethod
    def from_bytes(cls, content: bytes, mime_type: str) -> Self:
        """Build image content from raw bytes."""
        return cls(data=base64.b64encode(content).decode("ascii"), mime_type=mime_type)

    @property
    def data_url(self) -> str:
        """The image as a ``data:`` URL (what OpenAI takes)."""
        return f"data:{self.mime_type};base64,{self.data}"


Content: TypeAlias = TextContent | ImageContent

ToolContent: TypeAlias = Annotated[TextContent | ImageContent, Field(discriminator="type")]
"""One item of content a model reads: :class:`TextContent` or :class:`ImageContent`, told
apart by ``type`` (``pydantic.TypeAdapter(list[ToolContent])`` validates a list of dicts)."""


async def result_content(result: ToolResult, state: ThreadState | None = None) -> list[ToolContent]:
    """The result as content: its text first, then one :class:`ImageContent` per image.

    Args:
        result: A tool result.
        state: The thread whose files hold the result's :class:`AttachmentRef` s; without it
            only inline :class:`ToolAttachment` images can be sent.
    """
    content: list[ToolContent] = [TextContent(text=result_text(result))]
    for item in result.attachments:
        if item.mime_type not in IMAGE_MIME_TYPES:
            continue
        if isinstance(item, ToolAttachment):
            data = item.content()
        elif isinstance(item, AttachmentRef) and state is not None:
            if item.size > MAX_IMAGE_BYTES:
                continue
            try:
                data = await state.read_file(item.path)
            except (ThreadFileNotFoundError, ValueError):
                continue
        else:
            continue
        if len(data) <= MAX_IMAGE_BYTES:
            content.append(ImageContent.from_bytes(data, item.mime_type))
    return content


async def render_content(
    results: Iterable[ToolResult], format: ContentFormat, state: ThreadState | None = None
) -> list[dict[str, Any]]:
    """Render results for a provider, images as images (see the module docstring).

    Args:
        results: Results from ``Thread.execute_tool_calls`` (they carry their ``call_id``;
            not needed for ``"mcp"``).
        format: ``"openai-responses"``, ``"openai-chat"``, ``"anthropic"`` or ``"mcp"``.
        state: The thread the results' attachments are files of.

    Returns:
        One item per result (``function_call_output`` items, ``tool`` messages followed by at
        most one ``user`` message of images, ``tool_result`` blocks, or ``CallToolResult``
        dicts).

    Raises:
        ProviderFormatError: Unknown format, or a result without ``call_id``.
    """
    if format not in _FORMATS:
        raise ProviderFormatError(f"unknown format {format!r}; expected one of {_FORMATS}")
    rendered: list[dict[str, Any]] = []
    chat_images: list[dict[str, Any]] = []
    for result in results:
        if format != "mcp" and not result.call_id:
            raise ProviderFormatError(
                f"result of tool {result.tool_name!r} has no call_id; render results returned "
                "by execute_tool_calls"
            )
        content = await result_content(result, state)
        text = content[0].text if isinstance(content[0], TextContent) else ""
        images = [c for c in content if isinstance(c, ImageContent)]
        if format == "openai-responses":
            output: str | list[dict[str, Any]] = text
            if images:
                output = [{"type": "input_text", "text": text}]
                output += [{"type": "input_image", "image_url": i.data_url} for i in images]
            rendered.append(
                {"type": "function_call_output", "call_id": result.call_id, "output": output}
            )
        elif format == "openai-chat":
            rendered.append({"role": "tool", "tool_call_id": result.call_id, "content": text})
            if images:
                note = f"Images returned by tool call {result.call_id}:"
                chat_images.append({"type": "text", "text": note})
                chat_images += [
                    {"type": "image_url", "image_url": {"url": i.data_url}} for i in images
                ]
        elif format == "anthropic":
            blocks: str | list[dict[str, Any]] = text
            if images:
                blocks = [{"type": "text", "text": text}]
                blocks += [
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": i.mime_type, "data": i.data},
                    }
                    for i in images
                ]
            rendered.append(
                {
                    "type": "tool_result",
                    "tool_use_id": result.call_id,
                    "content": blocks,
                    "is_error": result.status == "error",
                }
            )
        else:
            rendered.append(mcp_result(result, content))
    if chat_images:
        rendered.append({"role": "user", "content": chat_images})
    return rendered


def mcp_result(result: ToolResult, content: list[Content]) -> dict[str, Any]:
    """A ``CallToolResult`` dict: text and images, ``isError``, and ``structuredContent``
    when the value is an object (a failure's too: code mode's answer is one)."""
    items: list[dict[str, Any]] = []
    for c in content:
        if isinstance(c, TextContent):
            items.append({"type": "text", "text": c.text})
        else:
            items.append({"type": "image", "data": c.data, "mimeType": c.mime_type})
    out: dict[str, Any] = {"content": items, "isError": result.status == "error"}
    if isinstance(result.result, dict):
        out["structuredContent"] = result.result
    return out
