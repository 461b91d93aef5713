"""What a run executes, derived from its options: JavaScript sources and the host data.

TypeScript is erased here (on the caller's thread, before the run exists), host modules and
globals are encoded into value messages with their :class:`HostFunction` leaves numbered into
the run's dispatch table, and the content ID is computed from all of it on demand.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from quickjail.sandbox import _values
from quickjail.sandbox._options import RunOptions
from quickjail.sandbox._result import ErrorInfo
from quickjail.sandbox._typescript import TypeScriptError
from quickjail.sandbox.host import HostFunction

__all__ = ["Program", "content_id", "prepare"]

_TS_SUFFIXES = (".ts", ".mts", ".cts")
_JS_SUFFIXES = (".js", ".mjs", ".cjs")


@dataclass(frozen=True, slots=True)
class Program:
    """The sources and host data one run sends into its guest."""

    source: str  # the entry, as JavaScript
    modules: Mapping[str, str]  # graph keys → JavaScript
    user_sources: Mapping[str, str | None]  # file → what the user wrote (error positions)
    host_modules: Mapping[str, bytes]  # bare specifier → value message of its namespace
    globals_message: bytes
    functions: tuple[HostFunction, ...]  # the dispatch table, by id


def prepare(opts: RunOptions) -> Program | ErrorInfo:
    """Erase TypeScript and encode the host data; a TypeScript refusal is the run's error.

    Raises:
        TypeError: host data that cannot be sent into the guest (naming where it sits).
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
    try:
        source = (
            _strip(opts.source, opts.filename) if opts.language == "typescript" else opts.source
        )
        modules = {
            key: _strip(src, key) if _is_typescript(key, opts.language) else src
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
    if key.endswith(_TS_SUFFIXES):
        return True
    if key.endswith(_JS_SUFFIXES):
        return False
    return language == "typescript"


@functools.lru_cache(maxsize=512)
def _strip(source: str, filename: str) -> str:
    from quickjail.sandbox._typescript import strip_types  # tree-sitter loads on first use

    return strip_types(source, filename=filename)
