"""What a run executes, derived from its options: JavaScript sources and the host data.

TypeScript is erased here (before the run exists, within its timeout: small sources on the
caller's thread, large ones in a helper process, see :mod:`._typescript`), host modules and
globals are encoded into value messages with their :class:`HostFunction` leaves numbered into
the run's dispatch table, and the content ID is computed from all of it on demand.
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Final

from quickjail.sandbox import _values
from quickjail.sandbox._options import RunOptions
from quickjail.sandbox._result import ErrorInfo
from quickjail.sandbox._shapes import strip_fence
from quickjail.sandbox._typescript_error import TypeScriptError
from quickjail.sandbox.host import HostFunction

__all__ = ["Program", "content_id", "prepare"]

_TS_SUFFIXES = (".ts", ".mts", ".cts")
_JS_SUFFIXES = (".js", ".mjs", ".cjs")


class Program:
    """The sources and host data one run sends into its guest.

    Read-only by contract (``Final``); a plain class, not a frozen dataclass, because building
    one at import costs about a millisecond of every process's first run.
    """

    __slots__ = (
        "functions",
        "globals_message",
        "host_modules",
        "modules",
        "source",
        "user_sources",
    )

    def __init__(
        self,
        *,
        source: str,
        modules: Mapping[str, str],
        user_sources: Mapping[str, str | None],
        host_modules: Mapping[str, bytes],
        globals_message: bytes,
        functions: tuple[HostFunction, ...],
    ) -> None:
        self.source: Final = source  # the entry, as JavaScript
        self.modules: Final = modules  # graph keys → JavaScript
        self.user_sources: Final = user_sources  # file → what the user wrote (error positions)
        self.host_modules: Final = host_modules  # bare specifier → value message of its namespace
        self.globals_message: Final = globals_message
        self.functions: Final = functions  # the dispatch table, by id


def prepare(opts: RunOptions, deadline: float | None = None) -> Program | ErrorInfo:
    """Erase TypeScript and encode the host data; a TypeScript refusal is the run's error.

    Args:
        opts: the run's checked options.
        deadline: ``time.monotonic()`` time by which the TypeScript must be stripped (the
            run's timeout counts the stripping); None for none.

    Raises:
        TypeError: host data that cannot be sent into the guest (naming where it sits).
        StripTimeout: the deadline passed while TypeScript was being stripped.
    """
    functions: list[HostFunction] = []

    def register(fn: HostFunction) -> int:
        functions.append(fn)
        return len(functions) - 1

    host_modules: dict[str, bytes] = {}
    globals_message = b""
    if opts.host is not None:
        for name, namespace in opts.host.modules.items():
            where = f"imports[{name!r}]"
            host_modules[name] = _values.encode(namespace, path=where, functions=register)
        if opts.host.globals:
            globals_message = _values.encode(
                dict(opts.host.globals), path="globals", functions=register
            )
    source = strip_fence(opts.source) if opts.kind == "auto" else opts.source
    try:
        if opts.language == "typescript":
            source = _strip(source, opts.filename, deadline)
        modules = {
            key: _strip(src, key, deadline) if _is_typescript(key, opts.language) else src
            for key, src in opts.modules.items()
        }
    except TypeScriptError as exc:
        stack = f"    at {exc.filename}:{exc.line}:{exc.column}\n"
        return ErrorInfo("SyntaxError", exc.message, stack, exc.line, exc.column, exc.filename)
    return Program(
        source=source,
        modules=modules,
        user_sources={**opts.modules, opts.filename: opts.source},
        host_modules=host_modules,
        globals_message=globals_message,
        functions=tuple(functions),
    )


def content_id(opts: RunOptions, program: Program | ErrorInfo, build_id: str) -> str:
    """sha256 of the guest build, the sources, the module graph, the host data and the options
    that change what the program computes."""
    digest = hashlib.sha256(build_id.encode())
    record: dict[str, Any] = {
        "source": opts.source,
        "kind": opts.kind,
        "fn": opts.fn,
        "filename": opts.filename,
        "language": opts.language,
        "modules": dict(opts.modules),
        "dynamic": opts.dynamic_code,
        "deterministic": opts.deterministic,
        "seed": opts.seed,
        "fuel": opts.fuel,
    }
    if isinstance(program, Program):
        record["imports"] = sorted((k, v.hex()) for k, v in program.host_modules.items())
        record["globals"] = program.globals_message.hex()
    text = json.dumps(record, sort_keys=True, ensure_ascii=False)
    digest.update(text.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def _is_typescript(key: str, language: str) -> bool:
    if key.endswith(".json"):
        return False  # JSON modules are data, imported with { type: "json" }
    if key.endswith(_TS_SUFFIXES):
        return True
    if key.endswith(_JS_SUFFIXES):
        return False
    return language == "typescript"


STRIP_CACHE_BYTES = 32 * 2**20
"""Bytes of TypeScript sources and their JavaScript the strip cache keeps at most, process-wide."""


class _StripCache:
    """Stripped TypeScript by (source, file name), least recently used out first.

    Bounded in bytes, not entries: a long-lived server sees programs of any size, and a cache
    bounded by count keeps count × 2 × program size. An entry is charged the memory of its
    strings (the JavaScript is free when it is the source itself, i.e. there were no types);
    one larger than a quarter of the budget is not kept, so a single huge program cannot flush
    everything else. Refusals are not cached. Thread-safe: runs prepare on callers' threads.
    """

    def __init__(self, budget: int) -> None:
        self._budget = budget
        self._entries: OrderedDict[tuple[str, str], tuple[str, int]] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    @property
    def size(self) -> int:
        """Bytes charged to the entries kept now."""
        return self._size

    def get(self, source: str, filename: str) -> str | None:
        """Returns the JavaScript kept for this source, or None."""
        key = (source, filename)
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            self._entries.move_to_end(key)
            return entry[0]

    def put(self, source: str, filename: str, javascript: str) -> None:
        """Keeps the JavaScript of a source, evicting the least recently used over budget."""
        cost = sys.getsizeof(source) + sys.getsizeof(filename)
        if javascript is not source:
            cost += sys.getsizeof(javascript)
        if cost > self._budget // 4:
            return
        key = (source, filename)
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._size -= old[1]
            self._entries[key] = (javascript, cost)
            self._size += cost
            while self._size > self._budget:
                _, (_, evicted) = self._entries.popitem(last=False)
                self._size -= evicted

    def clear(self) -> None:
        """Drops every entry."""
        with self._lock:
            self._entries.clear()
            self._size = 0


_strip_cache = _StripCache(STRIP_CACHE_BYTES)


def _strip(source: str, filename: str, deadline: float | None = None) -> str:
    """Strips TypeScript through the process-wide cache (see :class:`_StripCache`)."""
    javascript = _strip_cache.get(source, filename)
    if javascript is None:
        from quickjail.sandbox._typescript import strip_types  # tree-sitter loads on first use

        javascript = strip_types(source, filename=filename, deadline=deadline)
        _strip_cache.put(source, filename, javascript)
    return javascript
