"""Sensitive text: the host facts a program must never see, and the text a run let out.

The runner compares the two: a host path, an environment value or the canary's secret
found in what crossed the boundary is a leak. What a program was given itself (its source,
the fuzzed arguments) is excluded by the runner, not here.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

import quickjail
from quickjail import bridge, sandbox
from quickjail._stress._canary import Canary

__all__ = ["error_texts", "host_strings", "result_texts", "show", "texts_of"]

_SHOW: Final = 240


def host_strings(roots: Sequence[str], canary: Canary) -> list[str]:
    """Host facts that must not appear in what the program sees."""
    found = {
        os.getcwd(),
        os.path.expanduser("~"),
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        os.path.dirname(sys.executable),
        *roots,
    }
    for module in (sandbox, bridge, quickjail):  # where quickjail is installed
        file = getattr(module, "__file__", None)
        if file:
            found.add(os.path.dirname(os.path.dirname(os.path.abspath(file))))
    if canary.directory is not None:
        found.add(canary.directory)
    found.update(v for v in os.environ.values() if len(v) >= 12)
    return sorted(s for s in found if len(s) >= 5 and s.strip("/"))


def texts_of(value: Any, depth: int = 0) -> Iterator[str]:
    """Every string (and bytes, as latin-1) inside a value that crossed the boundary."""
    if depth > 300:
        return
    if isinstance(value, str):
        yield value
    elif isinstance(value, bytes | bytearray | memoryview | sandbox.TypedArray):
        yield bytes(value).decode("latin-1")
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from texts_of(k, depth + 1)
            yield from texts_of(v, depth + 1)
    elif isinstance(value, list | tuple | set | frozenset):
        for v in value:
            yield from texts_of(v, depth + 1)
    elif isinstance(value, sandbox.ErrorInfo):
        yield value.name
        yield value.message
        yield value.stack
        yield from texts_of(value.value, depth + 1)
    elif isinstance(value, sandbox.LogEntry):
        yield from texts_of(value.args, depth + 1)


def result_texts(r: sandbox.CodeResult) -> list[str]:
    """Every text of a run's result, reports, logs and error."""
    return [*texts_of(r.result), *texts_of(r.reports), *texts_of(r.logs), *texts_of(r.error)]


def error_texts(r: sandbox.CodeResult) -> list[str]:
    """Error messages and stacks of a run, including the fuzz program's caught error."""
    caught = r.result if isinstance(r.result, Mapping) else {}
    return [
        *texts_of(r.error),
        *texts_of(r.logs),
        *texts_of([caught.get("err"), caught.get("stack")]),
    ]


def show(value: Any) -> str:
    """The ``repr`` of a value for a message, cut to a readable length."""
    text = repr(value)
    return text if len(text) <= _SHOW else f"{text[:_SHOW]}... ({len(text)} chars)"
