r"""What ``quickjail run`` prints in text mode: a program's text made safe for a terminal.

A program's strings (logs, reports, its result, error names, messages and stacks) may hold
terminal control sequences: an OSC 52 escape writes the user's clipboard, others clear the
screen, move the cursor or retitle the window, and bidirectional overrides make text read
differently from what it is. Text mode shows each C0 control but tab and newline, DEL, each
C1 control and each bidirectional control as an escape (``\x1b``, ``\u202e``); ``--json``
prints the JSON exactly.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["safe_json", "safe_text"]

_UNSAFE: Final = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def safe_text(text: str) -> str:
    """``text`` with every terminal control character shown as an escape (linear time)."""
    return _UNSAFE.sub(_escape, text)


def safe_json(text: str) -> str:
    """A line of JSON with terminal control characters as ``\\uXXXX`` escapes.

    They can only occur inside JSON strings, so the line stays JSON and decodes to the same
    value.
    """
    return _UNSAFE.sub(_json_escape, text)
