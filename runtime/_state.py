"""What a tool sees of its thread: :class:`ThreadState`, its execution and abort signal."""

from __future__ import annotations

import dataclasses
import json
import warnings
from collections import deque
from collections.abc import AsyncIterator, Callable, Generator, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import anyio
from pydantic import BaseModel

from quickjail.sandbox.host import is_async_callable

from ._mime import check_mime_type
from ._paths import normalize_dir, normalize_path
from ._result import AttachmentRef, ToolAttachment, ToolResult
from ._secrets import Redactor, SecretBox
from ._storage import ThreadStorage
from ._tenvs import parse_tenvs
from ._tool import reachable_tools
from .errors import SecretKeyError, ThreadFileNotFoundError

if TYPE_CHECKING:
    from ._calls import ParsedCall
    from ._store import Store, ThreadRow
    from ._tool import Tool

__all__ = ["AbortSignal", "ExecutionState", "ThreadCodeExecution", "ThreadCore", "ThreadState"]

EventHook = Callable[[str, str, Any], Any]


class AbortSignal:
    """Tells tools to stop early. Set by the runtime when a batch is cancelled, or by the host.

    Tools poll :attr:`aborted`; calls of a batch not yet started when it is set are not run
    (they get an error result).
    """

    __slots__ = ("_reason",)

    def __init__(self) -> None:
        """Create an unset signal."""
        self._reason: str | None = None

    @property
    def aborted(self) -> bool:
        """Whether the signal was set."""
        return self._reason is not None

    @property
    def reason(self) -> str | None:
        """Why it was set, or ``None``."""
        return self._reason

    def abort(self, reason: str = "aborted") -> None:
        """Set the signal (the first reason is kept)."""
        if self._reason is None:
            self._reason = reason or "aborted"

    def __repr__(self) -> str:
        return f"<AbortSignal aborted={self.aborted} reason={self._reason!r}>"


@dataclasses.dataclass(slots=True)
class ExecutionState:
    """Progress of the thread's current batch of tool calls, named as in the tools spec
    (``stepCount``, ``currentSide``, ``abortSignal`` in snake_case).

    Attributes:
        step_count: Tool calls started in the current batch (nested code-mode calls included).
        current_side: Which side of the conversation is acting: ``"a"``, or ``"b"`` when a
            host running a dual-agent thread sets it (the runtime itself runs one side).
        abort_signal: The batch's :class:`AbortSignal`; a fresh one per batch.
    """

    step_count: int = 0
    current_side: Literal["a", "b"] = "a"
    abort_signal: AbortSignal = dataclasses.field(default_factory=AbortSignal)

    @property
    def side(self) -> Literal["a", "b"]:
        """Deprecated alias of :attr:`current_side` (the spec's ``currentSide``)."""
        warnings.warn("ExecutionState.side is deprecated; use current_side", DeprecationWarning, 2)
        return self.current_side

    @side.setter
    def side(self, value: Literal["a", "b"]) -> None:
        warnings.warn("ExecutionState.side is deprecated; use current_side", DeprecationWarning, 2)
        self.current_side = value


class ThreadCore:
    """Shared, per-thread machinery behind every :class:`ThreadState` view. Internal.

    ``chain`` is the thread's ancestry as stored, nearest first: the thread itself (with the
    scoped names its tools declare), its parent, and so on up to a root thread.
    """

    def __init__(
        self,
        *,
        chain: Sequence[ThreadRow],
        store: Store,
        box: SecretBox | None,
        tools: Mapping[str, Tool],
        prompt_env: Mapping[str, str],
        agent_env: Mapping[str, str],
        agent_config: Mapping[str, Any],
        on_event: EventHook | None,
        approval_timeout: float | None = None,
    ) -> None:
        """Assemble the core; :meth:`load_secrets` must run before use."""
        self.chain = list(chain)
        self.thread_id = self.chain[0].id
        self.parent_id = self.chain[0].parent_id
        self.turn_count = self.chain[0].turn_count
        self.store = store
        self.box = box
        self.tools = tools
        self.prompt_env = dict(prompt_env)
        self.agent_env = dict(agent_env)
        self.agent_config = agent_config
        self.on_event = on_event
        self.approval_timeout = approval_timeout
        self.redactor = Redactor()
        self.execution = ExecutionState()
        self.pending: deque[ParsedCall] = deque()
        # top-level calls about to wait for approval, by call id (see _approvals.Parked)
        self.parked: dict[str, Any] = {}
        self.batch_lock = anyio.Lock()
        self.secret_names: set[str] = set()
        self.reachable = reachable_tools(tools.values())
        for tool in self.reachable:
            self.declare(tool)
        self.root = ThreadState(self)

    def declare(self, tool: Tool) -> None:
        """Learn a tool's variables: secret names and their configured values."""
        for var in tool.variables:
            if var.type == "secret" and var.name not in self.secret_names:
                self.secret_names.add(var.name)
                for layer in (self.prompt_env, self.agent_env):
                    if var.name in layer:
                        self.redactor.add(layer[var.name])

    def sources(self, name: str) -> list[str]:
        """The threads whose own value of ``name`` this thread sees, nearest first.

        A thread inherits its parent's values, except a ``scoped`` variable at the thread that
        declares it: the walk stops at the topmost thread of the chain whose tools declare it
        scoped, so that thread and its descendants see only values set from there down.
        """
        chain, out = self.chain, []
        for i, row in enumerate(chain):
            out.append(row.id)
            parent_declares = i + 1 < len(chain) and name in chain[i + 1].scoped
            if name in row.scoped and not parent_declares:
                break
        return out

    def context(self, owner: str, name: str) -> bytes:
        """Associated data binding a secret's ciphertext to the thread holding it and its name."""
        return json.dumps(["quickjail-secret", owner, name]).encode()

    async def lookup(self, name: str, *, decrypt: bool = True) -> str | None:
        """Merge the layers for ``name``: prompt, then agent, then threads; later wins.

        Args:
            name: The variable.
            decrypt: ``False`` only asks whether it is set (a stored secret comes back as
                ``""``, undecrypted).

        Raises:
            SecretKeyError: The winning value is a stored secret and no (or a wrong) key is set.
        """
        found = await self.store.find_variable(self.sources(name), name)
        if found is not None:
            owner, kind, value = found
            if kind != "secret":
                text = value.decode()
                if name in self.secret_names:  # stored in clear before a tool declared it
                    self.redactor.add(text)
                return text
            if not decrypt:
                return ""
            if self.box is None:
                raise SecretKeyError(
                    f"variable {name!r} is a secret; reading it needs Runtime(secret_key=...)"
                )
            secret = self.box.decrypt(value, self.context(owner, name))
            self.redactor.add(secret)
            return secret
        for layer in (self.agent_env, self.prompt_env):
            if name in layer:
                return layer[name]
        return None

    async def missing_required(self, pending: Iterable[str] = ()) -> list[tuple[str, str, str]]:
        """``(variable, tool, description)`` of each required variable no layer sets, for
        every local tool of the thread and every tool they reach (code mode's).

        Args:
            pending: Names about to be set on the thread (count as set).
        """
        about_to_set, out = set(pending), []
        for tool in self.reachable:
            if tool.execution_mode != "local":
                continue
            for var in tool.variables:
                if not var.required or var.name in about_to_set:
                    continue
                if await self.lookup(var.name, decrypt=False) is None:
                    out.append((var.name, tool.name, var.description))
        return out

    async def load_secrets(self) -> None:
        """Learn the secret values of the thread and its ancestors, to redact them: stored
        secrets (decrypted, with a key) and text values of variables a tool declares secret
        (stored in clear before a tool declared them, e.g. one reached through code mode)."""
        for row in self.chain:
            for name, kind, value in await self.store.list_variables(row.id):
                if kind != "secret":
                    if name in self.secret_names:
                        self.redactor.add(value.decode())
                elif self.box is not None:
                    self.redactor.add(self.box.decrypt(value, self.context(row.id, name)))

    def redact_result(self, result: ToolResult) -> ToolResult:
        """Return the result with every secret value replaced by ``[REDACTED]``."""
        r = self.redactor
        if not r:
            return result
        attachments: list[ToolAttachment | AttachmentRef] = []
        for item in result.attachments:
            if isinstance(item, ToolAttachment):
                content = item.content()
                clean = r.data(content)
                item = (
                    ToolAttachment.from_bytes(
                        r.text(item.name),
                        item.mime_type,
                        clean,
                        width=item.width,
                        height=item.height,
                    )
                    if clean != content or r.text(item.name) != item.name
                    else item
                )
            attachments.append(item)
        return result.model_copy(
            update={
                "result": r.value(result.result),
                "error": None if result.error is None else r.text(result.error),
                "stack": None if result.stack is None else r.text(result.stack),
                "attachments": attachments,
            }
        )


class ThreadState:
    """A thread as a tool sees it: identity, progress, variables (``env``, ``tenvs``), files,
    ``storage``, ``agent_config`` and ``run_code``.

    Each tool call gets a view bound to its tool (with its ``tenvs``); all views of a thread
    share one state, reachable as :attr:`root_state`.
    """

    __slots__ = ("_call_id", "_core", "_tenvs", "_tool")

    def __init__(
        self, core: ThreadCore, tool: Tool | None = None, call_id: str | None = None
    ) -> None:
        """Create a view; obtain states from ``Runtime.thread(...)``, not directly."""
        self._core = core
        self._tool = tool
        self._call_id = call_id
        self._tenvs: BaseModel | None = None

    def __repr__(self) -> str:
        tool = f" tool={self._tool.name!r}" if self._tool else ""
        return f"<ThreadState {self._core.thread_id!r}{tool}>"

    @property
    def thread_id(self) -> str:
        """The thread's id."""
        return self._core.thread_id

    @property
    def parent_id(self) -> str | None:
        """The parent thread's id, for a child thread."""
        return self._core.parent_id

    @property
    def storage(self) -> ThreadStorage:
        """SQL on tables private to this thread (``await state.storage.sql(query, params)``)."""
        return ThreadStorage(self._core.store.storage, self._core.thread_id)

    @property
    def turn_count(self) -> int:
        """Batches of tool calls executed on the thread so far (one per model turn)."""
        return self._core.turn_count

    @property
    def execution(self) -> ExecutionState:
        """The current batch's progress and abort signal."""
        return self._core.execution

    @property
    def root_state(self) -> ThreadState:
        """The thread's top-level state (not bound to a tool), e.g. for ``queue_tool``."""
        return self._core.root

    @property
    def tool_name(self) -> str | None:
        """The tool this view is bound to, if any."""
        return self._tool.name if self._tool else None

    @property
    def call_id(self) -> str | None:
        """The id of the tool call this view serves, if any."""
        return self._call_id

    # ---------------------------------------------------------------- internal, used by tools

    def _bind(self, tool: Tool, call_id: str | None = None) -> ThreadState:
        if tool is self._tool and call_id is None:
            return self
        self._core.declare(tool)
        return ThreadState(self._core, tool, call_id)

    async def _load_tenvs(self, tool: Tool) -> str | None:
        """Resolve the tool's variables before it runs; set :attr:`tenvs`.

        Returns:
            Why the tool cannot run (a required variable is unset, a tenv does not parse).
        """
        model = tool.tenvs_model
        values: dict[str, str] = {}
        missing = []
        for var in tool.variables:
            if model is None and not var.required:
                continue
            try:  # only a tenvs model needs the values; without one, presence is enough
                value = await self._core.lookup(var.name, decrypt=model is not None)
            except SecretKeyError as exc:
                return f"tool {tool.name!r}: {exc}"
            if value is not None:
                values[var.name] = value
            elif var.required:
                missing.append(var.name)
        if missing:
            names = ", ".join(repr(n) for n in missing)
            plural = "s" if len(missing) > 1 else ""
            return (
                f"tool {tool.name!r} requires variable{plural} {names}, which "
                f"{'are' if plural else 'is'} not set (prompt, agent or thread)"
            )
        if model is None:
            return None
        parsed = parse_tenvs(tool.name, model, values)
        if isinstance(parsed, str):
            return parsed
        self._tenvs = parsed
        return None

    def _redact_result(self, result: ToolResult) -> ToolResult:
        return self._core.redact_result(result)

    # ---------------------------------------------------------------- variables

    @property
    def tenvs(self) -> Any:
        """The running tool's ``tenvs=`` model, parsed from the merged variables.

        ``None`` outside a tool, or for a tool without ``tenvs=``.
        """
        return self._tenvs

    @property
    def agent_config(self) -> Mapping[str, Any]:
        """The agent's configuration, read-only all the way down.

        ``Runtime(agent_config=...)`` with the thread's own ``agent_config=`` keys over it
        (a child starts from its parent's).
        """
        return self._core.agent_config

    async def env(self, name: str) -> str | None:
        """Resolve a variable: prompt, then agent, then the threads; the later layer wins.

        The thread layer is the thread's own value, else the nearest ancestor's (a ``scoped``
        variable is not inherited past the thread declaring it).

        Returns:
            The value, or ``None`` if no layer has it.

        Raises:
            SecretKeyError: It is a stored secret and no (or a wrong) ``secret_key`` is set.
        """
        if not isinstance(name, str):
            raise TypeError("a variable name must be a str")
        return await self._core.lookup(name)

    async def set_env(
        self, name: str, value: str, type: Literal["text", "secret"] = "text"
    ) -> None:
        """Store a thread variable. Secrets are encrypted at rest and redacted everywhere.

        A variable some tool declares as ``secret`` is stored as a secret whatever ``type``
        says.

        Raises:
            SecretKeyError: Setting a secret without ``Runtime(secret_key=...)``.
            TypeError: ``name`` or ``value`` is not a str, or ``type`` is unknown.
        """
        core = self._core
        if not isinstance(name, str) or not name:
            raise TypeError("a variable name must be a non-empty str")
        if not isinstance(value, str):
            raise TypeError(f"variable {name!r}: value must be a str")
        if type not in ("text", "secret"):
            raise TypeError(f"variable {name!r}: type must be 'text' or 'secret'")
        if name in core.secret_names:
            type = "secret"
        if type == "secret":
            if core.box is None:
                raise SecretKeyError(
                    f"setting secret {name!r} needs Runtime(secret_key=...); refusing to store "
                    "it in plain text"
                )
            core.redactor.add(value)
            blob = core.box.encrypt(value, core.context(core.thread_id, name))
        else:
            blob = value.encode()
        await core.store.set_variable(core.thread_id, name, type, blob)

    # ---------------------------------------------------------------- files

    async def read_file(self, path: str) -> bytes:
        """Read a thread file.

        Raises:
            ThreadPathError: Malformed path.
            ThreadFileNotFoundError: No such file.
        """
        canonical = normalize_path(path)
        data = await self._core.store.read_file(self._core.thread_id, canonical)
        if data is None:
            raise ThreadFileNotFoundError(f"no such thread file: {canonical!r}")
        return data

    async def write_file(
        self, path: str, data: bytes | str, *, mime_type: str | None = None
    ) -> AttachmentRef:
        """Create or replace a thread file (text is stored as UTF-8).

        Like everything stored, the content has known secret values redacted.

        Returns:
            The file as an :class:`AttachmentRef` (its stable id, kept when the file is
            rewritten; ``mime_type`` ``application/octet-stream`` when none is given), ready
            to return from a tool.

        Raises:
            ThreadPathError: Malformed path.
            ValueError: ``mime_type`` is not a MIME type (``type/subtype``).
        """
        if mime_type is not None:
            mime_type = check_mime_type(mime_type)
        canonical = normalize_path(path)
        content = data.encode() if isinstance(data, str) else bytes(data)
        content = self._core.redactor.data(content)
        info = await self._core.store.write_file(
            self._core.thread_id, canonical, content, mime_type
        )
        return AttachmentRef(
            id=info.id or "",
            path=canonical,
            name=canonical.rsplit("/", 1)[-1],
            mime_type=mime_type or "application/octet-stream",
            size=info.size,
        )

    async def list_files(self, directory: str = "/") -> list[str]:
        """List every file under ``directory`` (recursively), as canonical paths."""
        canonical = normalize_dir(directory)
        infos = await self._core.store.list_files(self._core.thread_id, canonical)
        return [info.path for info in infos]

    # ---------------------------------------------------------------- code

    def run_code(self, source: str, *, files: bool = False, **options: Any) -> ThreadCodeExecution:
        """Run code in a fresh sandbox, as ``quickjail.bridge.run_code`` does, bound to this thread.

        Args:
            source: JavaScript or TypeScript source of the entry module.
            files: Bridge the thread's files read-only as ``import { readFile, readdir, stat }
                from "fs"``.
            **options: Passed to ``bridge.run_code`` (``execute``, ``imports``, ``globals``,
                ``modules``, ``language``, ``timeout``, ...).

        Returns:
            The run handle; everything it shows (the awaited result, ``result``, ``reports()``,
            ``reports_so_far``, the ``report=`` callback's values) has secrets redacted.
        """
        from quickjail import bridge

        self._code_options(files, options)
        redactor = self._core.redactor
        return ThreadCodeExecution(bridge.run_code(source, **options), redactor)

    def _resume_code(
        self, sealed: bytes, *, files: bool = False, **options: Any
    ) -> ThreadCodeExecution:
        """Continue a paused run as :meth:`run_code` would have gone on (``bridge.resume``'s
        options; ``files`` as the paused run's, so its modules are the same)."""
        from quickjail import bridge

        self._code_options(files, options)
        return ThreadCodeExecution(bridge.resume(sealed, **options), self._core.redactor)

    def _code_options(self, files: bool, options: dict[str, Any]) -> None:
        """Add the thread's files module (``files=True``) and redact the report callback."""
        if files:
            from ._fs import ThreadFiles

            imports = dict(options.pop("imports", None) or {})
            if "fs" in imports:
                raise ValueError("files=True provides the 'fs' module; do not pass imports['fs']")
            imports["fs"] = ThreadFiles(self)
            options["imports"] = imports
        if options.get("report") is not None:
            options["report"] = redacting_report(options["report"], self._core.redactor)


class ThreadCodeExecution:
    """A ``sandbox.CodeExecution`` seen through the thread's redactor.

    Every way out of the run shows secrets redacted: the awaited (or ``run_sync``) result,
    :attr:`result`, :meth:`reports`, :attr:`reports_so_far` and the ``report=`` callback.
    Only the members listed here exist, so a new member of the sandbox handle cannot leak
    values past the redactor.
    """

    __slots__ = ("_inner", "_redactor")

    def __init__(self, inner: Any, redactor: Redactor) -> None:
        """Wrap a ``sandbox.CodeExecution``."""
        self._inner = inner
        self._redactor = redactor

    def __await__(self) -> Generator[Any, None, Any]:
        return self.wait().__await__()

    @property
    def content_id(self) -> str:
        """The run's content id (see ``sandbox.CodeExecution.content_id``)."""
        return str(self._inner.content_id)

    @property
    def running(self) -> bool:
        """True from the first await until the run ends."""
        return bool(self._inner.running)

    @property
    def result(self) -> Any:
        """The redacted ``CodeResult`` once the run ended, else None."""
        result = self._inner.result
        return None if result is None else redact_code_result(result, self._redactor)

    @property
    def reports_so_far(self) -> list[Any]:
        """The reports received until now, redacted (a copy)."""
        return [self._redactor.value(r) for r in self._inner.reports_so_far]

    def terminate(self, reason: str = "terminated") -> None:
        """Stop the run from any thread or task; a no-op once it ended."""
        self._inner.terminate(reason)

    async def wait(self) -> Any:
        """Drive the run and return its redacted ``CodeResult``."""
        return redact_code_result(await self._inner, self._redactor)

    def run_sync(self) -> Any:
        """Drive the run from synchronous code; return its redacted ``CodeResult``."""
        return redact_code_result(self._inner.run_sync(), self._redactor)

    async def reports(self) -> AsyncIterator[Any]:
        """Yield each report, redacted, as it arrives; end when the run ends."""
        async for value in self._inner.reports():
            yield self._redactor.value(value)


def redacting_report(report: Any, r: Redactor) -> Any:
    """Wrap a ``report=`` callback so it sees redacted values (sync stays sync, async async)."""
    if report is None:
        return None
    if is_async_callable(report):

        async def async_report(value: Any) -> Any:
            return await report(r.value(value))

        return async_report

    def sync_report(value: Any) -> Any:
        return report(r.value(value))

    return sync_report


def redact_code_result(result: Any, r: Redactor) -> Any:
    """Redact a ``sandbox.CodeResult`` (a frozen dataclass): value, error, logs and reports.

    Every field of the error is redacted (its ``name`` is whatever the program set, as
    free as its message), so a field added later is covered too.
    """
    if not r:
        return result
    error = result.error
    if error is not None:
        error = dataclasses.replace(
            error, **{f.name: r.value(getattr(error, f.name)) for f in dataclasses.fields(error)}
        )
    logs = [dataclasses.replace(log, args=r.value(log.args)) for log in result.logs]
    return dataclasses.replace(
        result,
        result=r.value(result.result),
        error=error,
        logs=logs,
        reports=r.value(result.reports),
        reason=None if result.reason is None else r.text(result.reason),
    )
