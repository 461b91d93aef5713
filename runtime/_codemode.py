"""Code mode: one ``run_code`` tool whose sandbox can call other tools as async functions.

The model writes TypeScript in any of the shapes ``kind="auto"`` runs (a module, an async arrow,
statements with top-level await or return, an expression; fenced or not). The tools are the
global ``tools`` (and, if asked, a second global name such as ``codemode``) and the module
``"tools"`` (``import { tools } from "tools"``, or a tool by name): one async function per tool,
each returning ``{status, result, error}`` (with ``stack`` for a failure and
``attachments``, in the spec's JavaScript names: ``mimeType``, not ``mime_type``) rather than
throwing, so the model's code decides what a failure means. A name that is no tool
(``tools.nope()``) rejects with an error naming it and listing the tools. Arguments must be
JSON data (``undefined`` is dropped as ``JSON.stringify`` drops it; ``NaN``, a
``Uint8Array``, ``Set`` or ``Date`` resolve to an error result), are validated by the tool's
own model, and every nested call is persisted on the thread like a top-level one (with
``parent_call_id``). A call still in flight when the program ends is cancelled and recorded
as such; the rest of the model's batch goes on.

A call to a tool that ``requires_approval`` pauses the program (``bridge.Pause``): the runtime
stores the sealed continuation, encrypted, and resumes it exactly once the call is decided
(see :mod:`quickjail.runtime._approvals`). The answer carries the program's call log
(``calls``).
"""

from __future__ import annotations

import dataclasses
import functools
import re
import time
import uuid
from collections.abc import Callable, Coroutine, Iterable
from typing import Any, Final

import anyio
from pydantic import BaseModel, Field

from quickjail import bridge, sandbox

from ._answer import answer_schema, run_code_answer
from ._approvals_data import Parked, approval_context, record_call
from ._arguments import ArgumentsError, plain_arguments
from ._calls import ParsedCall
from ._define import define_tool, unique_tools
from ._result import ToolResult
from ._state import ThreadState
from ._thread import persist, run_call
from ._tool import Tool
from ._typescript_decl import is_export_name, ts_module_declaration
from .errors import ThreadQuotaError, ToolDefinitionError

__all__ = ["code_mode_tool"]

_MODULE: Final = "tools"
_JS_NAMES: Final = {"mime_type": "mimeType"}
_FILE_RE: Final = re.compile(r'File "([^"\n]*)"')
_SEPARATOR_RE: Final = re.compile(r"[/\\]")
#: The run_code options a resumed program keeps (the rest are the paused run's own).
_RESUME_OPTIONS: Final = ("files", "report", "timeout", "memory_limit_bytes")
_DEFAULT_DESCRIPTION: Final = (
    "Run TypeScript in a fresh, isolated sandbox (ECMAScript only: no network, files or "
    'require). The global `tools` (declared below, also importable from "tools") has one '
    "async function per tool; each resolves to {status, result, error} (plus stack for a "
    "failure, attachments when there are any) and never throws. Run "
    "independent calls concurrently with Promise.all. Write statements ending in `return "
    "value` (top-level await works), an async arrow function, or a module that does `export "
    "default` the value. The answer is a JSON object {status, result, error, reason, reports, "
    "logs}, as the plain run_code tool's."
)


class RunCodeArgs(BaseModel):
    # no docstring: pydantic would put it in the schema the model reads
    code: str = Field(
        description=(
            "TypeScript: statements (top-level await; `return` the result), an async arrow "
            "function, or an ES module with `export default`, e.g. "
            "`const r = await tools.some_tool({...}); return r.result;`"
        )
    )


AsyncToolFn = Callable[..., Coroutine[Any, Any, dict[str, Any]]]


def code_mode_tool(
    tools: Iterable[Tool],
    *,
    name: str = "run_code",
    description: str | None = None,
    namespace: str | None = None,
    **run_code_options: Any,
) -> Tool:
    """Build a tool that runs model-written code able to call ``tools``.

    Args:
        tools: Local tools the code may call (unique names).
        name: The code-mode tool's name.
        description: Replaces the default introduction; the TypeScript declaration of the
            ``"tools"`` module and the globals is always appended.
        namespace: A second global name for the ``tools`` object (e.g. ``"codemode"``, the
            Cloudflare convention); ``tools`` is always defined.
        **run_code_options: Passed to ``state.run_code`` for every run (``timeout``,
            ``memory_limit_bytes``, ``files=True``, extra ``imports`` or ``globals``, ...).
            ``kind`` defaults to ``"auto"``: every code shape a model writes runs.

    Returns:
        The tool; its description carries the declaration the model needs.

    Raises:
        ToolDefinitionError: Duplicate or provider-executed tools, ``imports`` already
            defining ``"tools"``, ``globals`` already defining a tools global, or a
            ``namespace`` that is not an identifier.
    """
    index = unique_tools(tools, "code_mode_tool(tools=...)")
    provider = [t.name for t in index.values() if t.execution_mode != "local"]
    if provider:
        raise ToolDefinitionError(f"code_mode_tool: provider-executed tools {provider} cannot run")
    extra_imports = dict(run_code_options.pop("imports", None) or {})
    if _MODULE in extra_imports:
        raise ToolDefinitionError('code_mode_tool: imports must not define the "tools" module')
    names = ["tools"]
    if namespace is not None:
        if not isinstance(namespace, str) or not is_export_name(namespace):
            raise ToolDefinitionError(
                f"code_mode_tool: namespace must be an identifier, not {namespace!r}"
            )
        if namespace != "tools":
            names.append(namespace)
    extra_globals = dict(run_code_options.pop("globals", None) or {})
    taken = sorted(set(names) & set(extra_globals))
    if taken:
        raise ToolDefinitionError(f"code_mode_tool: globals must not define {taken}")
    run_code_options.setdefault("kind", "auto")
    declaration = ts_module_declaration(list(index.values()), _MODULE)
    declaration += "".join(f'\ndeclare const {n}: typeof import("{_MODULE}").tools;' for n in names)
    text = f"{description or _DEFAULT_DESCRIPTION}\n\n```ts\n{declaration}\n```"
    missing = _missing_tool(sorted(index))

    def host(state: ThreadState) -> dict[str, Any]:
        """The run's imports and globals: the tools as async functions bound to ``state``
        (the same names in the same order for a run and its resumes)."""
        functions = {tool_name: _tool_function(state, tool) for tool_name, tool in index.items()}
        module: dict[str, Any] = {"tools": functions}
        for tool_name, fn in functions.items():
            if is_export_name(tool_name) and tool_name != "tools":
                module[tool_name] = fn
        # the globals: the same functions, and a fallback for a name that is no tool
        spaces = {n: {**functions, sandbox.host.NAMESPACE_FALLBACK: missing} for n in names}
        return {
            "imports": {**extra_imports, _MODULE: module},
            "globals": {**extra_globals, **spaces},
        }

    async def execute(state: ThreadState, args: dict[str, Any]) -> ToolResult:
        if state is not None and state.call_id is not None:
            # the program's calls to tools needing approval collect here (see _approvals)
            state._core.parked.setdefault(state.call_id, Parked("code", name))
        options = {**run_code_options, **host(state)}
        # run_code erases TypeScript before it returns (for a large source, a helper process's
        # parse up to the run's timeout): wait for it on a worker thread, not the event loop.
        execution = await anyio.to_thread.run_sync(
            functools.partial(state.run_code, args["code"], **options)
        )
        return await _finish(state, await execution)

    async def resume(
        state: ThreadState, sealed: bytes, context: bytes, answers: dict[int, Any]
    ) -> ToolResult:
        box = state._core.box
        assert box is not None  # a program pauses at an approval only with a key
        options = {k: run_code_options[k] for k in _RESUME_OPTIONS if k in run_code_options}
        run = state._resume_code(
            sealed, key=box.seal_key, context=context, answers=answers, **options, **host(state)
        )
        return await _finish(state, await run)

    checked = define_tool(description=text, args=RunCodeArgs, execute=execute, name=name)
    # its answer is any JSON value, which no argument model can declare: published as schemas
    tool = Tool(
        name=checked.name,
        description=text,
        args=None,
        execute=execute,
        variables=(),
        returns=None,
        execution_mode="local",
        execution_provider=None,
        schemas=(checked.input_schema, answer_schema()),
        reaches=tuple(index.values()),
    )
    tool._resumer = Resumer(index, resume)
    return tool


class Resumer:
    """What the runtime needs to resume a code-mode program paused at an approval: the
    tools its program calls, and ``resume(state, sealed, context, answers)``."""

    __slots__ = ("resume", "tools")

    def __init__(
        self,
        tools: dict[str, Tool],
        resume: Callable[..., Coroutine[Any, Any, ToolResult]],
    ) -> None:
        self.tools = tools
        self.resume = resume


async def _finish(state: ThreadState, result: sandbox.CodeResult) -> ToolResult:
    """The code-mode call's result; a program paused at approvals leaves its sealed
    continuation with the call's :class:`Parked` (the runtime then stores it)."""
    core = state._core
    parked = core.parked.get(state.call_id) if state.call_id is not None else None
    if parked is None:
        return _code_result(result)
    if not parked.approvals:
        return _code_result(result, parked.calls)
    by_id = {a.id: a for a in parked.approvals}
    mapped = []
    box, continuation = core.box, result.continuation
    if result.status == "paused" and continuation is not None and box is not None:
        for paused in result.paused:
            info = paused.info if isinstance(paused.info, dict) else {}
            found = by_id.get(str(info.get("approval_id")))
            if found is None:
                break
            mapped.append(dataclasses.replace(found, run_call=paused.call_id))
    if (
        box is not None
        and continuation is not None
        and len(mapped) == len(result.paused) == len(by_id)
    ):
        parked.approvals = mapped
        context = approval_context(core, "continuation", parked.pause_id)
        parked.continuation = continuation.seal(box.seal_key, context)
        return _code_result(result)
    # the program ended without waiting for them: those calls never run
    for approval in parked.approvals:
        call = ParsedCall(approval.call_id, approval.tool_name, None)
        failed = ToolResult.failure("not run: the program ended before it was approved")
        await persist(core, failed, call, approval.parent_call_id)
    parked.approvals.clear()
    return _code_result(result, parked.calls)


def _missing_tool(available: list[str]) -> Callable[[Any], Coroutine[Any, Any, None]]:
    """The fallback of the tools globals: a call of a name that is no tool rejects, naming it
    and the tools there are (the model can correct itself from the message)."""
    listed = ", ".join(available) or "(none)"

    async def missing_tool(name: Any) -> None:
        raise bridge.HostError(f"there is no tool named {str(name)!r}; the tools are: {listed}")

    return missing_tool


def _tool_function(state: ThreadState, tool: Tool) -> AsyncToolFn:
    core, parent = state._core, state.call_id

    async def call_tool(args: Any = None) -> dict[str, Any]:
        call_id = f"code_{uuid.uuid4().hex[:24]}"
        if args is None or args is sandbox.UNDEFINED:
            args = {}
        if isinstance(args, dict):
            try:
                plain = plain_arguments(args)
            except ArgumentsError as exc:
                error = f"invalid arguments for tool {tool.name!r}: {exc}"
                call = ParsedCall(call_id, tool.name, None, None, error)
            else:
                call = ParsedCall(call_id, tool.name, plain, plain)
        else:
            error = f"arguments for tool {tool.name!r} must be an object"
            call = ParsedCall(call_id, tool.name, None, None, error)
        started = time.monotonic()
        try:
            result = await run_call(core, call, tool=tool, parent_call_id=parent)
        except ThreadQuotaError as exc:
            # the thread cannot store the call (or its result): the program learns it from an
            # error result, as from any failed call, and the thread stays within its quota
            return {"status": "error", "result": None, "error": f"ThreadQuotaError: {exc}"}
        assert result is not None  # local tools always produce a result
        if result.status == "waiting":
            # the call waits for a person: the program pauses here (its promise stays
            # pending) and resumes with the decision
            raise bridge.Pause({"approval_id": result.result["approval_ids"][0]})
        record_call(core, parent, tool, call, result, time.monotonic() - started)
        return js_result(result)

    call_tool.__name__ = call_tool.__qualname__ = tool.name
    return call_tool


def js_result(result: ToolResult) -> dict[str, Any]:
    """A tool's result as the program sees it, in the spec's JavaScript names.

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


def _code_result(
    result: sandbox.CodeResult, calls: list[dict[str, Any]] | None = None
) -> ToolResult:
    """A ``sandbox.CodeResult`` as the code-mode tool's result: its value is the run's answer
    (:class:`RunCodeAnswer`, the plain ``run_code`` tool's shape) whatever the outcome, with
    the program's call log (``calls``) when it ran as a thread's call."""
    answer = run_code_answer(result)
    if calls is not None:
        answer["calls"] = calls
    if result.status == "success":
        return ToolResult.success(answer)
    error = result.error
    stack = error.stack if error is not None and error.stack else None
    return ToolResult.failure(_failure(result), result=answer, stack=stack)


def _failure(result: sandbox.CodeResult) -> str:
    """What went wrong, in words that follow the ``Error: `` a model reads before a failure."""
    error = result.error
    if result.status == "terminated":
        return f"the program was stopped ({result.reason or 'terminated'})"
    if result.status == "paused":
        # a host function of the caller's raised Pause: code mode resumes only approvals
        names = ", ".join(p.function for p in result.paused)
        return f"the program paused waiting for {names}, which code mode cannot resume"
    if error is None:
        return f"the run ended with status {result.status}"
    where = f" at line {error.line}, column {error.column}" if error.line else ""
    if result.status == "error":
        return f"uncaught {error.name}: {error.message}{where}"
    return f"{result.status.replace('_', ' ')}: {error.name}: {error.message}{where}"
