"""The :class:`Runtime`: tools, configuration and the database, opened as an async context."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Final, Self

from ._secrets import SecretBox
from ._state import EventHook, ThreadCore
from ._store import Store
from ._thread import Thread
from ._tool import Tool, unique_tools
from .errors import RuntimeClosedError

__all__ = ["Runtime"]

_MAX_THREAD_ID: Final = 256


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
        on_event: EventHook | None = None,
    ) -> None:
        """Configure the runtime (nothing is opened until ``async with``).

        Args:
            db_path: The SQLite database file (created if missing).
            tools: The tools threads can call; names must be unique.
            secret_key: Key material (≥ 32 bytes) for secrets at rest. Without it, setting or
                reading a secret is an error.
            prompt_env: Variables of the prompt layer (highest precedence).
            agent_env: Variables of the agent layer (between prompt and thread).
            on_event: ``fn(thread_id, type, data)`` (sync or async) called for each
                ``emit_thread_event``.

        Raises:
            ToolDefinitionError: Duplicate tool names.
            SecretKeyError: A key shorter than 32 bytes.
        """
        self._path = os.fspath(db_path)
        self._tools = unique_tools(tools, "Runtime(tools=...)")
        self._box = SecretBox(secret_key) if secret_key is not None else None
        self._prompt_env = _env(prompt_env, "prompt_env")
        self._agent_env = _env(agent_env, "agent_env")
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
            self._store = await Store.open(self._path)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the database; safe to call more than once."""
        self._closed = True
        store, self._store = self._store, None
        if store is not None:
            await store.close()

    async def thread(
        self,
        thread_id: str | None = None,
        *,
        env: Mapping[str, str] | None = None,
        prompt_env: Mapping[str, str] | None = None,
        agent_env: Mapping[str, str] | None = None,
    ) -> Thread:
        """Create a thread, or reopen the one with ``thread_id``.

        Args:
            thread_id: The thread to reopen or create; a new random id when ``None``.
            env: Text variables to store on the thread (its own layer, lowest precedence).
            prompt_env: Overrides of the runtime's prompt layer for this thread.
            agent_env: Overrides of the runtime's agent layer for this thread.

        Raises:
            RuntimeClosedError: The runtime is not open.
            SecretKeyError: The thread has secrets the configured key cannot decrypt.
        """
        if self._store is None:
            raise RuntimeClosedError("the Runtime is not open; use `async with Runtime(...)`")
        if thread_id is not None and (
            not isinstance(thread_id, str) or not thread_id or len(thread_id) > _MAX_THREAD_ID
        ):
            raise ValueError(f"thread_id must be a non-empty str of at most {_MAX_THREAD_ID}")
        tid, turns = await self._store.open_thread(thread_id)
        core = ThreadCore(
            thread_id=tid,
            turn_count=turns,
            store=self._store,
            box=self._box,
            tools=self._tools,
            prompt_env={**self._prompt_env, **_env(prompt_env, "prompt_env")},
            agent_env={**self._agent_env, **_env(agent_env, "agent_env")},
            on_event=self._on_event,
        )
        await core.load_secrets()
        for name, value in _env(env, "env").items():
            await core.root.set_env(name, value)
        return Thread(core)


def _env(values: Mapping[str, str] | None, what: str) -> dict[str, str]:
    out = dict(values or {})
    for name, value in out.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError(f"{what}: names and values must be str (got {name!r})")
    return out
