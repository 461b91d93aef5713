"""A program's calls to tools in code mode: arguments in, the tool's value (or an Error) out.

A tool function resolves to the tool's value and rejects with an ``Error`` carrying the tool's
message, as Cloudflare's codemode and UTCP do. ``tool(args, { raw: true })`` resolves to the
whole result instead, ``{status, result, error, stack?, attachments?}`` (never rejecting), which
is how a program reaches a result's attachments. Every call is validated by the tool's own
schema and persisted on the thread like a top-level one (with ``parent_call_id``).
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable, Coroutine
from typing import Any, Final

from quickjail import bridge, sandbox

from ._approvals_data import record_call
from ._arguments import ArgumentsError, plain_arguments
from ._calls import ParsedCall
from ._result import ToolResult
from ._state import ThreadState
from ._thread import run_call
from ._tool import Tool
from .errors import ThreadQuotaError

__all__ = ["AsyncToolFn", "call_options", "js_result", "tool_function"]

AsyncToolFn = Callable[..., Coroutine[Any, Any, Any]]

_JS_NAMES: Final = {"mime_type": "mimeType"}
_FILE_RE: Final = re.compile(r'File "([^"\n]*)"')
_SEPARATOR_RE: Final = re.compile(r"[/\\]")


def call_options(options: Any, name: str) -> bool:
    """Whether a call asked for the raw result: its second argument is absent or
    ``{ raw: boolean }``.

    Raises:
        bridge.ArgumentError: Anything else (a TypeError in the program).
    """
    if options is None or options is sandbox.UNDEFINED:
        return False
    if isinstance(options, dict) and set(options) <= {"raw"}:
        raw = options.get("raw", False)
        if isinstance(raw, bool):
            return raw
    raise bridge.ArgumentError(
        f"the second argument of {name}() must be {{ raw: true }} or left out"
    )


def tool_function(state: ThreadState, tool: Tool, qualified: str | None = None) -> AsyncToolFn:
    """The async function a program calls for ``tool``, bound to ``state``.

    Args:
        state: The code-mode call's thread state (its nested calls persist there).
        tool: The tool.
        qualified: The name the call is recorded under (``github.create_issue`` for a
            connector's tool); the tool's own name by default.
    """
    core, parent = state._core, state.call_id
    name = qualified or tool.name

    async def call_tool(args: Any = None, options: Any = None) -> Any:
        raw = call_options(options, name)
        call_id = f"code_{uuid.uuid4().hex[:24]}"
        if args is None or args is sandbox.UNDEFINED:
            args = {}
        if isinstance(args, dict):
            try:
                plain = plain_arguments(args)
            except ArgumentsError as exc:
                error = f"invalid arguments for tool {name!r}: {exc}"
                call = ParsedCall(call_id, name, None, None, error)
            else:
                call = ParsedCall(call_id, name, plain, plain)
        else:
            error = f"arguments for tool {name!r} must be an object"
            call = ParsedCall(call_id, name, None, None, error)
        started = time.monotonic()
        try:
            result = await run_call(core, call, tool=tool, parent_call_id=parent)
        except ThreadQuotaError as exc:
            # the thread cannot store the call (or its result): the program learns it as from
            # any failed call, and the thread stays within its quota
            result = ToolResult.failure(f"ThreadQuotaError: {exc}")
            return js_result(result) if raw else _reject(result)
        assert result is not None  # local tools always produce a result
        if result.status == "waiting":
            # the call waits for a person: the program pauses here (its promise stays
            # pending) and resumes with the decision
            raise bridge.Pause({"approval_id": result.result["approval_ids"][0], "raw": raw})
        record_call(core, parent, tool, call, result, time.monotonic() - started)
        if raw:
            return js_result(result)
        if result.status == "success":
            return result.result
        return _reject(result)

    call_tool.__name__ = call_tool.__qualname__ = name
    return call_tool


def _reject(result: ToolResult) -> Any:
    """Reject the program's promise with an ``Error`` whose message is the tool's."""
    raise bridge.HostError(result.error or "the tool failed without a message")


def js_result(result: ToolResult) -> dict[str, Any]:
    """A tool's whole result as a program sees it (``{ raw: true }``), in JavaScript names.

    ``{status, result, error}``, plus ``stack`` for a failure that has one (host paths cut to
    file names) and ``attachments`` as ``{id, type, path, name, mimeType, size, width?,
    height?, description?}`` (fields that are not set are left out, as JavaScript does).
    """
    out: dict[str, Any] = {"status": result.status, "result": result.result, "error": result.error}
    if result.status == "error" and result.stack:
        out["stack"] = _FILE_RE.sub(_file_name, result.stack)
    if result.attachments:
        out["attachments"] = [
            {
                _JS_NAMES.get(k, k): v
                for k, v in a.model_dump(mode="json", exclude_none=True).items()
            }
            for a in result.attachments
        ]
    return out


def _file_name(found: re.Match[str]) -> str:
    """``File "/a/b/tool.py"`` as ``File "tool.py"``: no host path reaches the program."""
    name = _SEPARATOR_RE.split(found[1])[-1]
    return f'File "{name}"'
