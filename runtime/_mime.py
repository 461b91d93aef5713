"""MIME types a tool may state: ``type/subtype`` of RFC 6838 names, with optional parameters.

A MIME type goes into the text a model reads (``- /attachments/a.png (image/png, 5 bytes)``)
and into provider payloads, so it is held to its grammar rather than taken as free text: a
value with a newline, a space or a ``)`` cannot add lines or close the parenthesis. Type and
subtype are lower-cased (they are case-insensitive), so ``IMAGE/PNG`` is sent as an image.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["MAX_MIME_TYPE", "check_mime_type"]

MAX_MIME_TYPE: Final = 255
_NAME: Final = r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}"
_TOKEN: Final = r"[A-Za-z0-9!#$%&'*+.^_`|~-]+"
_MIME_RE: Final = re.compile(
    rf"(?P<type>{_NAME})/(?P<subtype>{_NAME})"
    rf"(?P<params>(?:[ \t]*;[ \t]*{_TOKEN}=(?:{_TOKEN}|\"[^\"\\\x00-\x1f\x7f]*\"))*)"
)


def check_mime_type(value: object) -> str:
    """Return ``value`` as a canonical MIME type (type and subtype lower-cased).

    Raises:
        ValueError: Not a string, longer than :data:`MAX_MIME_TYPE`, or not ``type/subtype``
            with optional ``; name=value`` parameters (the message shows the value escaped).
    """
    if not isinstance(value, str):
        raise ValueError(f"a MIME type must be a string, got {type(value).__name__}")
    shown = ascii(value[:60]) + ("..." if len(value) > 60 else "")
    if len(value) > MAX_MIME_TYPE:
        raise ValueError(f"MIME type longer than {MAX_MIME_TYPE} characters: {shown}")
    found = _MIME_RE.fullmatch(value)
    if found is None:
        raise ValueError(f"not a MIME type (expected type/subtype, e.g. image/png): {shown}")
    return f"{found['type'].lower()}/{found['subtype'].lower()}{found['params']}"
