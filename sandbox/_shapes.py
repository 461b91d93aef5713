"""The host's part of ``kind="auto"``: one surrounding Markdown fence is blanked out in place.

Which code shape the text is (a module, a function or arrow, statements, a function body, an
expression) is decided by the guest's own parser (``sandbox/_guest/entry.c``), inside the run
and under its limits. The host only removes a fence a model wrapped the code in, and does it
without moving any character: the fence lines become empty lines, so every line and column an
error shows is one in the text the caller passed. The work is two scans, linear in the text.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["FENCE_LANGUAGES", "strip_fence"]

FENCE_LANGUAGES: Final = frozenset(
    {"", "js", "javascript", "jsx", "mjs", "cjs", "ts", "typescript", "tsx", "mts", "cts"}
)
"""The info strings of an opening fence that is stripped (compared in lower case). The tag does
not choose the language: ``language=`` does, and its default, TypeScript, reads JavaScript as
written."""

_OPENING = re.compile(r"```[ \t]*([A-Za-z]*)[ \t]*\r?")


def strip_fence(source: str) -> str:
    """Blank out one Markdown code fence around the whole text (its first and last non-blank
    lines), keeping every line break; any other text is returned as it is."""
    start = len(source) - len(source.lstrip())
    end = len(source.rstrip())
    opening_end = source.find("\n", start, end)
    if opening_end < 0:
        return source
    match = _OPENING.fullmatch(source, start, opening_end)
    if match is None or match.group(1).lower() not in FENCE_LANGUAGES:
        return source
    closing_start = source.rfind("\n", opening_end, end) + 1
    if closing_start <= opening_end or source[closing_start:end].strip() != "```":
        return source
    return source[:start] + source[opening_end:closing_start] + source[end:]
