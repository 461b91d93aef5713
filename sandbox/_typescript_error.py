"""The refusal of TypeScript that erasing types cannot turn into JavaScript.

A module of its own so that a run can recognise the refusal without loading the stripper and
its tree-sitter grammar (:mod:`._typescript` loads them; a JavaScript run never needs them).
"""

from __future__ import annotations

__all__ = ["GENERATED_PER_BYTE", "StripTimeout", "TypeScriptError", "max_output_bytes"]

GENERATED_PER_BYTE = 8
"""Bytes of code that ``enum`` and parameter properties may generate per source byte (plus
64 KiB): an enum of one-letter members, the densest, takes about 7."""


def max_output_bytes(source_bytes: int) -> int:
    """The most UTF-8 bytes the JavaScript of a TypeScript source of `source_bytes` may have:
    erasing keeps the size, code generation adds at most this much (refused beyond)."""
    return source_bytes * (GENERATED_PER_BYTE + 1) + 64 * 2**10


class TypeScriptError(Exception):
    """A TypeScript construct that cannot be turned into JavaScript by erasing types.

    Attributes:
        message: What is not supported, and what to write instead.
        line: 1-based line of the construct's start in the source (lines end at ``\\n``).
        column: 1-based column of the construct's start, in code points of that line.
        filename: The name the source was given, for display.
    """

    message: str
    line: int
    column: int
    filename: str

    def __init__(
        self, message: str, *, line: int, column: int, filename: str = "<run_code>"
    ) -> None:
        super().__init__(f"{filename}:{line}:{column}: {message}")
        self.message = message
        self.line = line
        self.column = column
        self.filename = filename


class StripTimeout(Exception):
    """The run's deadline passed while its TypeScript was being stripped.

    Never reaches the caller: the run that prepared the source ends as a timeout
    (``status="terminated"``, ``reason="timeout"``), as if its guest had been stopped.
    """
