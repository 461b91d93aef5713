"""The argument types of the flags: sizes, seconds, seeds, counts, JSON values, modules.

Each parser raises :class:`argparse.ArgumentTypeError` with a message that says what to give
instead (with an example), which argparse prints as a usage error.
"""

from __future__ import annotations

import argparse
import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

__all__ = [
    "DEFAULT_MEMORY",
    "MAX_MEMORY",
    "MAX_WORKERS",
    "MIN_MEMORY",
    "format_size",
    "parse_count",
    "parse_global",
    "parse_json",
    "parse_module",
    "parse_result_chars",
    "parse_seconds",
    "parse_seed",
    "parse_size",
    "parse_workers",
]

# Bounds of sandbox.run_code's memory_limit_bytes.
MIN_MEMORY: Final = 8 * 2**20
MAX_MEMORY: Final = 4 * 2**30 - 2**16
# --memory when not given
DEFAULT_MEMORY: Final = 64 * 2**20
# the largest --workers: a typo (--workers 20000) must not fork a process per run
MAX_WORKERS: Final = 256

_SIZE_RE: Final = re.compile(r"(?P<num>\d+(?:\.\d+)?)\s*(?P<unit>[kmg]?)(?:i?b)?", re.IGNORECASE)
_UNITS: Final[Mapping[str, int]] = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30}


def parse_size(text: str) -> int:
    """Parse a memory size: bytes (``67108864``) or a number with K, M or G (powers of 1024).

    ``64M``, ``64MiB``, ``64mb``, ``1.5G`` and ``512k`` are accepted.

    Args:
        text: The flag's value.

    Returns:
        The size in bytes.

    Raises:
        argparse.ArgumentTypeError: If the text is not a size; the message shows the forms.
    """
    m = _SIZE_RE.fullmatch(text.strip())
    if m is None:
        raise argparse.ArgumentTypeError(
            f"cannot read {text!r} as a size: give bytes or a number with K, M or G "
            f"(powers of 1024), e.g. 64M or 1G"
        )
    size = float(m["num"]) * _UNITS[m["unit"].lower()]
    if not size.is_integer():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of bytes; e.g. use 64M")
    if not MIN_MEMORY <= size <= MAX_MEMORY:
        raise argparse.ArgumentTypeError(
            f"{text!r} is out of range: the sandbox takes 8M up to 4G minus 64K "
            f"({MAX_MEMORY} bytes), e.g. 64M"
        )
    return int(size)


def parse_seconds(text: str) -> float:
    """Parse a positive, finite number of seconds (``0.5``, ``10``).

    Args:
        text: The flag's value.

    Returns:
        The number of seconds.

    Raises:
        argparse.ArgumentTypeError: If the text is not a positive finite number.
    """
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a positive number of seconds; e.g. 0.5 or 10"
        )
    return value


def parse_seed(text: str) -> int:
    """Parse a seed: an integer from 0 to 2**64-1 (``0x`` and ``0o`` prefixes allowed)."""
    try:
        value = int(text, 0)
    except ValueError:
        value = -1
    if not 0 <= value < 2**64:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a seed: give an integer from 0 to 2**64-1, e.g. 42"
        )
    return value


def parse_count(text: str) -> int:
    """Parse a count: an integer >= 0."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a count; give an integer >= 0, e.g. 50")
    return value


def parse_workers(text: str) -> int:
    """Parse a worker-process count: an integer from 1 to 256."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_WORKERS:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a worker count; give an integer from 1 to {MAX_WORKERS}, e.g. 2"
        )
    return value


def parse_result_chars(text: str) -> int:
    """Parse a result length in characters: an integer from 1,000 up."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1_000:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a result length; give a number of characters from 1000 up, "
            "e.g. 200000"
        )
    return value


def parse_json(flag: str, example: str) -> Callable[[str], Any]:
    """The argument type of a JSON-valued flag; its error shows ``flag example``."""

    def parse(text: str) -> Any:
        try:
            return json.loads(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not valid JSON ({exc}); strings need JSON quotes, "
                f"e.g. {flag} {example}"
            ) from None

    return parse


def parse_global(text: str) -> tuple[str, Any]:
    """Parse ``NAME=JSON`` into the global's name and value."""
    name, eq, raw = text.partition("=")
    if not eq or not name.isidentifier():
        raise argparse.ArgumentTypeError(
            f"{text!r} is not NAME=JSON; e.g. --global LIMIT=10 or --global 'MODE=\"fast\"'"
        )
    try:
        return name, json.loads(raw)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"the value of {name} is not valid JSON ({exc}); strings need JSON quotes, "
            f"e.g. --global '{name}=\"text\"'"
        ) from None


def parse_module(text: str) -> tuple[str, str]:
    """Parse ``./SPECIFIER=FILE`` into the specifier and the file's path."""
    spec, eq, path = text.partition("=")
    if not eq or not spec.startswith("./") or not path:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not ./SPECIFIER=FILE; e.g. --module ./util.ts=src/util.ts"
        )
    return spec, path


def format_size(n: int) -> str:
    """A size in bytes the way the flags take it: ``64M``, ``1G``, else a byte count."""
    for unit, size in (("G", 2**30), ("M", 2**20), ("K", 2**10)):
        if n % size == 0:
            return f"{n // size}{unit}"
    return f"{n} bytes"
