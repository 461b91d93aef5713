"""The :class:`Runtime`: tools, configuration and the database, opened as an async context."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterable, Mapping
from types import MappingProxyType, TracebackType
from typing import Any, Final, Self

import anyio

from ._define import unique_tools
from ._secrets import SecretBox
from ._state import EventHook, ThreadCore
from ._store import DEFAULT_MAX_THREAD_BYTES, Store, ThreadRow
from ._thread import Thread
from ._tool import Tool, reachable_tools
from .connectors import Connector
from .errors import MissingVariablesError, RuntimeClosedError

__all__ = ["Runtime"]

_MAX_THREAD_ID: Final = 256
#: How long a call waits for approval by default (seconds): a day.
DEFAULT_APPROVAL_TIMEOUT: Final = 24 * 3600.0
#: How deep child threads nest (a root thread is depth 1).
MAX_THREAD_DEPTH: Final = 32


class Runtime:
    """Owns the tools, the variable layers and the SQLite database of an agent.

    Use as ``async with Runtime(path, tools=[...], secret_key=...) as rt:``; closing twice is
    fine, using it after close raises :class:`RuntimeClosedError`.
    """

    def __init__(
        self,
        db_path: str | os.PathLike[str],
        *,
        tools: Iterable[Tool] = (),
        secret_key: bytes | str | None = None,
        prompt_env: Mapping[str, str] | None = None,
        agent_env: Mapping[str, str] | None = None,
        agent_config: Mapping[str, Any] | None = None,
        on_event: EventHook | None = None,
        max_thread_bytes: int = DEFAULT_MAX_THREAD_BYTES,
        approval_timeout: float | None = DEFAULT_APPROVAL_TIMEOUT,
    ) -> None:
        """Configure the runtime (nothing is opened until ``async with``).

        Args:
            db_path: The SQLite database file (created if missing).
            tools: The tools threads can call; names must be unique.
            secret_key: Key material (≥ 32 bytes) for secrets at rest. Without it, setting or
                reading a secret is an error.
            prompt_env: Variables of the prompt layer (lowest precedence).
            agent_env: Variables of the agent layer (overrides prompt; the thread overrides
                both).
            agent_config: JSON-like configuration tools read as ``state.agent_config``.
            on_event: ``fn(thread_id, type, data)`` (sync or async) called for each
                ``emit_thread_event``.
            max_thread_bytes: What one thread may store in the database (messages, files,
                variables, events; 256 MiB by default). A write past it stores nothing and
                raises :class:`ThreadQuotaError`; a code-mode nested call gets an error result.
            approval_timeout: Seconds a call waits for approval before its batch ends
                ``expired`` (24 h by default, as Cloudflare's codemode); None: no expiry.

        Raises:
            ToolDefinitionError: Duplicate tool names.
            SecretKeyError: A key shorter than 32 bytes.
            ValueError: ``max_thread_bytes`` is not a positive int.
        """
        if (
            not isinstance(max_thread_bytes, int)
            or isinstance(max_thread_bytes, bool)
            or max_thread_bytes <= 0
        ):
            raise ValueError(f"max_thread_bytes must be a positive int, not {max_thread_bytes!r}")
        self._max_thread_bytes = max_thread_bytes
        if approval_timeout is not None and (
            not isinstance(approval_timeout, (int, float))
            or isinstance(approval_timeout, bool)
            or not approval_timeout > 0
        ):
            raise ValueError("approval_timeout must be positive seconds or None")
        self._approval_timeout = approval_timeout
        self._path = os.fspath(db_path)
        self._tools = unique_tools(tools, "Runtime(tools=...)")
        self._box = SecretBox(secret_key) if secret_key is not None else None
        self._prompt_env = _env(prompt_env, "prompt_env")
        self._agent_env = _env(agent_env, "agent_env")
        self._agent_config = freeze_config(agent_config or {})
        self._on_event = on_event
        self._store: Store | None = None
        self._closed = False

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open" if self._store else "not open"
        return f"<Runtime {self._path!r} {state}, {len(self._tools)} tools>"

    @property
    def tools(self) -> tuple[Tool, ...]:
        """The runtime's tools, in the order given."""
        return tuple(self._tools.values())

    async def __aenter__(self) -> Self:
        if self._closed:
            raise RuntimeClosedError("this Runtime was closed; create a new one")
        if self._store is None:
            self._store = await Store.open(self._path, self._max_thread_bytes)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the database and the connectors its code-mode tools reach (their MCP
        servers, HTTP clients); safe to call more than once."""
        self._closed = True
        store, self._store = self._store, None
        try:
            for connector in self.connectors:
                with anyio.CancelScope(shield=True):
                    await connector.aclose()
        finally:
            if store is not None:
                await store.close()

    @property
    def connectors(self) -> tuple[Connector, ...]:
        """The connectors the runtime's code-mode tools reach; closed with the runtime."""
        found: dict[int, Connector] = {}
        for tool in self._tools.values():
            parts = getattr(tool, "_resumer", None)
            catalog = getattr(parts, "catalog", None)
            for connector in getattr(catalog, "connectors", {}).values():
                found.setdefault(id(connector), connector)
        return tuple(found.values())

    async def thread(
        self,
        thread_id: str | None = None,
        *,
        env: Mapping[str, str] | None = None,
        prompt_env: Mapping[str, str] | None = None,
        agent_env: Mapping[str, str] | None = None,
        agent_config: Mapping[str, Any] | None = None,
        parent: Thread | str | None = None,
        tools: Iterable[Tool] | None = None,
    ) -> Thread:
        """Create a thread, or reopen the one with ``thread_id``.

        Variables merge prompt → agent → thread, the later layer winning; the thread layer is
        the thread's own values over those it inherits from its ancestors. Every required
        variable of the thread's tools (and of the tools they reach, as code mode's) must have
        a value once merged, or nothing is created.

        Args:
            thread_id: The thread to reopen or create; a new random id when ``None``.
            env: Text variables to store on the thread (its own layer, highest precedence).
            prompt_env: Overrides of the prompt layer for this thread.
            agent_env: Overrides of the agent layer for this thread.
            agent_config: Overrides of ``Runtime(agent_config=...)`` (top-level keys).
            parent: Create the thread as a child of this one (a :class:`Thread` or an id).
                A child inherits its parent's variables (not ``scoped`` ones its tools
                declare and the parent's do not); given as a ``Thread``, also its layers,
                ``agent_config`` and tools. Stored: a reopened child keeps its parent.
            tools: The thread's tools, if not the runtime's (or its parent's).

        Raises:
            RuntimeClosedError: The runtime is not open.
            MissingVariablesError: Required variables are unset, listing each (name, tool,
                description).
            SecretKeyError: The thread has secrets the configured key cannot decrypt.
            ValueError: Unknown parent, another parent than the stored one, nesting deeper
                than :data:`MAX_THREAD_DEPTH`.
        """
        if self._store is None:
            raise RuntimeClosedError("the Runtime is not open; use `async with Runtime(...)`")
        store = self._store
        tid = _thread_id(thread_id) if thread_id is not None else uuid.uuid4().hex
        base = parent._core if isinstance(parent, Thread) else None
        if base is not None and base.store is not store:
            raise ValueError("parent= is a thread of another runtime")
        parent_id = base.thread_id if base is not None else parent
        if parent_id is not None:
            parent_id = _thread_id(parent_id, "parent")
            if parent_id == tid:
                raise ValueError("a thread cannot be its own parent")
        own = _env(env, "env")
        tool_map: Mapping[str, Tool]
        if tools is not None:
            tool_map = unique_tools(tools, "thread(tools=...)")
        else:
            tool_map = base.tools if base is not None else self._tools
        existing = await store.ancestry(tid, MAX_THREAD_DEPTH)
        if existing:
            if parent_id is not None and existing[0].parent_id != parent_id:
                raise ValueError(
                    f"thread {tid!r} exists with parent {existing[0].parent_id!r}, "
                    f"not {parent_id!r}"
                )
            parent_id, turns, ancestors = (
                existing[0].parent_id,
                existing[0].turn_count,
                existing[1:],
            )
        else:
            ancestors = []
            if parent_id is not None:
                ancestors = await store.ancestry(parent_id, MAX_THREAD_DEPTH)
                if not ancestors:
                    raise ValueError(f"parent thread {parent_id!r} does not exist")
                if len(ancestors) >= MAX_THREAD_DEPTH:
                    raise ValueError(f"threads nest at most {MAX_THREAD_DEPTH} deep")
            turns = 0
        scoped = frozenset(
            v.name for t in reachable_tools(tool_map.values()) for v in t.variables if v.scoped
        )
        layers = (base.prompt_env, base.agent_env) if base else (self._prompt_env, self._agent_env)
        core = ThreadCore(
            chain=[ThreadRow(tid, parent_id, turns, scoped), *ancestors],
            store=store,
            box=self._box,
            tools=tool_map,
            prompt_env={**layers[0], **_env(prompt_env, "prompt_env")},
            agent_env={**layers[1], **_env(agent_env, "agent_env")},
            agent_config=freeze_config(
                {**(base.agent_config if base else self._agent_config), **(agent_config or {})}
            ),
            on_event=self._on_event,
            approval_timeout=self._approval_timeout,
        )
        await core.load_secrets()
        missing = await core.missing_required(own)
        if missing:
            raise MissingVariablesError(missing)
        row = await store.open_thread(tid, parent_id, scoped)
        core.turn_count = row.turn_count
        for name, value in own.items():
            await core.root.set_env(name, value)
        return Thread(core, self)


def _thread_id(value: object, what: str = "thread_id") -> str:
    if not isinstance(value, str) or not value or len(value) > _MAX_THREAD_ID:
        raise ValueError(f"{what} must be a non-empty str of at most {_MAX_THREAD_ID}")
    return value


def freeze_config(value: Mapping[str, Any]) -> Mapping[str, Any]:
    """A read-only deep copy of a JSON-like configuration (mappings and tuples all the way).

    Raises:
        TypeError: A key is not a str, or a value is not JSON-like.
    """
    frozen = _freeze(value, "agent_config")
    assert isinstance(frozen, Mapping)
    return frozen


def _freeze(value: Any, where: str) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        json.dumps(value, allow_nan=False)
        return value
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{where}: keys must be str, got {key!r}")
            out[key] = _freeze(item, f"{where}[{key!r}]")
        return MappingProxyType(out)
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(item, f"{where}[{i}]") for i, item in enumerate(value))
    raise TypeError(f"{where}: {type(value).__name__} is not JSON-like")


def _env(values: Mapping[str, str] | None, what: str) -> dict[str, str]:
    out = dict(values or {})
    for name, value in out.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError(f"{what}: names and values must be str (got {name!r})")
    return out
