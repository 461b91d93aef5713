"""The framework-free core of the agent tools: one call, one fresh sandbox, a JSON answer."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, TypedDict

from quickjail import bridge, sandbox
from quickjail.runtime.helpers import RunCodeAnswer, invalid_answer, run_code_answer
from quickjail.sandbox.host import Kind

__all__ = ["NO_FETCH", "STANDARD_LIBRARY", "TOOL_NAME", "CodeRunner", "RunnerOptions"]

TOOL_NAME: Final = "run_code"

# what `code` may be, per kind: the text the model reads
_SHAPES: Final[dict[str, str]] = {
    "auto": "`code` may be statements ending in `return <value>` (top-level await works), "
    "an async arrow function (called and awaited), a bare expression, or an ES module whose "
    "default export is the result (`export default async function () { ... }` is called "
    "and awaited); one surrounding Markdown code fence is ignored.",
    "module": "`code` is an ES module: its default export is the result "
    "(`export default 6 * 7`, or `export default async function () { ... }`, which is "
    "called and awaited). Top-level await works.",
    "script": "`code` is a classic script: the value of its last statement is the result. "
    "Top-level await works.",
}


class RunnerOptions(TypedDict, total=False):
    """The keyword options every integration takes: the fields of :class:`CodeRunner`."""

    imports: Mapping[str, Any] | None
    globals: Mapping[str, Any] | None
    timeout: float
    max_timeout: float
    memory_limit_bytes: int
    language: Literal["typescript", "javascript"]
    kind: Kind
    output_limits: sandbox.OutputLimits | None
    quotas: bridge.Quotas | None
    capabilities: str | None


@dataclass(frozen=True, slots=True)
class CodeRunner:
    """How every ``run_code`` tool call runs.

    Attributes:
        imports: Host modules the programs may import (as for :func:`bridge.run_code`).
        globals: Host globals the programs see (functions and data).
        timeout: Seconds a call may run when it does not choose a timeout.
        max_timeout: Largest timeout a call may ask for; larger requests are lowered to it.
        memory_limit_bytes: Memory limit of every call.
        language: ``"typescript"`` (which also runs plain JavaScript) or ``"javascript"``.
        kind: How ``code`` is read: ``"auto"`` (default) runs every shape models write
            (statements ending in ``return``, one fenced block, an arrow function, a bare
            expression, an ES module), as MCP, the CLI and code mode do; ``"module"`` only
            an ES module; ``"script"`` only a classic script (its completion value).
        output_limits: Caps on logs, reports and the result (:class:`sandbox.OutputLimits`).
        quotas: Caps on host calls (:class:`bridge.Quotas`).
        capabilities: One sentence for the tool description saying what the bridge offers
            (e.g. ``'import { readFile } from "fs" reads the project files.'``).
    """

    imports: Mapping[str, Any] | None = None
    globals: Mapping[str, Any] | None = None
    timeout: float = 10.0
    max_timeout: float = 60.0
    memory_limit_bytes: int = 64 * 2**20
    language: Literal["typescript", "javascript"] = "typescript"
    kind: Kind = "auto"
    output_limits: sandbox.OutputLimits | None = None
    quotas: bridge.Quotas | None = None
    capabilities: str | None = None

    def __post_init__(self) -> None:
        for name in ("timeout", "max_timeout"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not (value > 0 and math.isfinite(value)):
                raise ValueError(f"{name} must be a positive number of seconds")
        if self.max_timeout < self.timeout:
            raise ValueError("max_timeout must not be below timeout")
        if self.kind not in _SHAPES:
            raise ValueError(f"kind must be one of {', '.join(_SHAPES)}")

    def code_description(self) -> str:
        """The description of the ``code`` argument a model reads."""
        return _SHAPES[self.kind]

    def description(self) -> str:
        """The tool description a model reads."""
        extra = self.capabilities or _bridged(self.imports, self.globals)
        return (
            "Run JavaScript or TypeScript in a fresh, isolated QuickJS sandbox and return its "
            f"result. {_SHAPES[self.kind]} {STANDARD_LIBRARY} "
            f"{_fetch_sentence(self.globals)} {extra} `console.log(...)` output and "
            "`report(value)` calls are returned with the result. "
            f"Each call has {self.memory_limit_bytes // 2**20} MiB of memory and a "
            f"{self.timeout:g} s timeout by default (at most {self.max_timeout:g} s). "
            "The answer is a JSON object {status, result, error, reason, reports, logs}; "
            'status is "success", "error", "link_error" (bad import), "memory", '
            '"terminated" (reason "timeout") or "invalid_arguments".'
        )

    def _options(self, timeout: float | None) -> dict[str, Any]:
        chosen = self.timeout if timeout is None else timeout
        if (
            not isinstance(chosen, int | float)
            or isinstance(chosen, bool)
            or not (chosen > 0 and math.isfinite(chosen))
        ):
            raise ValueError("`timeout` must be a positive number of seconds")
        options: dict[str, Any] = {
            "kind": self.kind,
            "language": self.language,
            "timeout": min(float(chosen), self.max_timeout),
            "memory_limit_bytes": self.memory_limit_bytes,
            "filename": "main.ts" if self.language == "typescript" else "main.js",
        }
        if self.imports:
            options["imports"] = self.imports
        if self.globals:
            options["globals"] = self.globals
        if self.output_limits is not None:
            options["output_limits"] = self.output_limits
        if self.quotas is not None:
            options["quotas"] = self.quotas
        return options

    def _prepare(
        self, code: object, timeout: float | None
    ) -> sandbox.CodeExecution | RunCodeAnswer:
        try:
            if not isinstance(code, str):
                raise TypeError("`code` must be a string of JS/TS source")
            return bridge.run_code(code, **self._options(timeout))
        except (TypeError, ValueError) as exc:  # includes sandbox.TransferError
            return invalid_answer(type(exc).__name__.lstrip("_"), str(exc))

    async def run(
        self,
        code: str,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> RunCodeAnswer:
        """Run ``code`` in a fresh sandbox.

        Args:
            code: The program's source, read as :attr:`kind` says.
            timeout: Seconds the run may take (default :attr:`timeout`, at most
                :attr:`max_timeout`).

        Returns:
            The answer (:class:`quickjail.runtime.helpers.RunCodeAnswer`), JSON data; a
            malformed call is ``status == "invalid_arguments"`` with the reason in ``error``.
        """
        import anyio

        # run_code erases TypeScript before it returns (for a large source, a helper
        # process's parse up to the run's timeout): wait for it on a worker thread, not the
        # event loop.
        execution = await anyio.to_thread.run_sync(self._prepare, code, timeout)
        if not isinstance(execution, sandbox.CodeExecution):
            return execution
        return run_code_answer(await execution)

    def run_sync(self, code: str, timeout: float | None = None) -> RunCodeAnswer:
        """:meth:`run` from synchronous code.

        With async host functions the run gets an event loop of its own: this thread's, or
        when this thread already runs one (a notebook, an async framework calling a sync
        tool) a new thread's, where those functions then run.
        """
        execution = self._prepare(code, timeout)
        if not isinstance(execution, sandbox.CodeExecution):
            return execution
        return run_code_answer(execution.run_sync())


STANDARD_LIBRARY: Final = (
    "ECMAScript plus the web platform's standard library as a Worker has it (TextEncoder/"
    "TextDecoder, URL/URLPattern, atob/btoa, structuredClone, setTimeout, AbortController, "
    "crypto, performance, Blob/File, Headers/Request/Response, FormData, ReadableStream/"
    "WritableStream/TransformStream, CompressionStream/DecompressionStream, MessageChannel); "
    "no Node APIs."
)
"""What every run's global scope offers, in the words of the tool descriptions models read."""

NO_FETCH: Final = "`fetch` rejects with a TypeError: there is no network."


def _fetch_sentence(glob: Mapping[str, Any] | None) -> str:
    if glob is not None and isinstance(glob.get("fetch"), bridge.Fetch):
        return "`fetch` reaches only the hosts the host allowed."
    return NO_FETCH


def _bridged(imports: Mapping[str, Any] | None, glob: Mapping[str, Any] | None) -> str:
    if not imports and not glob:
        return "There is no file, network or clock access beyond `Date`."
    parts = []
    if imports:
        parts.append(
            "the modules " + ", ".join(f'"{m}"' for m in sorted(imports)) + " can be imported"
        )
    if glob:
        parts.append("the globals " + ", ".join(sorted(glob)) + " are defined")
    return "Host capabilities: " + " and ".join(parts) + "."
