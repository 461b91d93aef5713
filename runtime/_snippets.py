"""Snippets: programs that worked, saved by name on a thread and called as ``snippets.name(args)``.

The model saves a program with the ``save_snippet`` tool (see
:func:`~quickjail.runtime.discovery_tools`); it is stored in the thread's database (counted in
the thread's quota) and listed by ``search``/``describe``. A program calls it as
``await snippets.name(args)``: the snippet runs in a fresh sandbox of its own with the same
tools and options as the calling program and ``args`` as a global, and the call resolves to
its value or rejects with its error. Snippets nest at most :data:`MAX_DEPTH` deep.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Final

from pydantic import BaseModel, Field

from ._result import ToolResult
from ._store_snippets import (
    count_snippets,
    select_snippet,
    select_snippets,
    upsert_snippet,
)
from ._typescript_decl import is_export_name
from .errors import ThreadQuotaError

if TYPE_CHECKING:
    from ._state import ThreadState

__all__ = [
    "MAX_DEPTH",
    "SaveSnippetArgs",
    "Snippet",
    "list_snippets",
    "load_snippet",
    "save_snippet",
    "snippet_declaration",
]

MAX_SNIPPETS: Final = 500
MAX_CODE: Final = 100_000
MAX_DESCRIPTION: Final = 2_000
MAX_DEPTH: Final = 3


@dataclass(frozen=True, slots=True)
class Snippet:
    """A saved program: its name (an identifier), what it does, and its code."""

    name: str
    description: str
    code: str


class SaveSnippetArgs(BaseModel):
    # no docstring: pydantic would put it in the schema the model reads
    name: str = Field(
        description="An identifier (letters, digits, _): the program calls snippets.<name>(args)",
        min_length=1,
        max_length=64,
    )
    description: str = Field(
        description="What it does and what `args` it takes", max_length=MAX_DESCRIPTION
    )
    code: str = Field(
        description="The program (any shape run_code takes); it reads its input from the "
        "global `args`",
        max_length=MAX_CODE,
    )


async def list_snippets(state: ThreadState) -> list[Snippet]:
    """The thread's snippets, by name."""
    core = state._core
    rows = await core.store.transact(core.thread_id, 0, partial(select_snippets, core.thread_id))
    return [Snippet(str(n), str(d), str(c)) for n, d, c in rows]


async def load_snippet(state: ThreadState, name: str) -> Snippet | None:
    """One snippet of the thread, or None."""
    core = state._core
    row = await core.store.transact(
        core.thread_id, 0, partial(select_snippet, core.thread_id, name)
    )
    return None if row is None else Snippet(str(row[0]), str(row[1]), str(row[2]))


async def save_snippet(state: ThreadState, name: str, description: str, code: str) -> ToolResult:
    """Store (or replace) a snippet; an error result for a bad name or a full thread."""
    if not is_export_name(name) or len(name) > 64:
        return ToolResult.failure(f"a snippet's name must be an identifier, not {name!r}")
    core = state._core
    size = len(name.encode()) + len(description.encode("utf-8", "surrogatepass"))
    size += len(code.encode("utf-8", "surrogatepass"))

    def store(conn: object) -> None:
        import sqlite3

        assert isinstance(conn, sqlite3.Connection)
        if select_snippet(core.thread_id, name, conn) is None:
            if count_snippets(core.thread_id, conn) >= MAX_SNIPPETS:
                raise ThreadQuotaError(f"the thread has {MAX_SNIPPETS} snippets already")
        upsert_snippet(core.thread_id, name, description, code, conn)

    try:
        await core.store.transact(core.thread_id, size, store)
    except ThreadQuotaError as exc:
        return ToolResult.failure(f"not saved: {exc}")
    return ToolResult.success({"saved": f"snippets.{name}"})


def snippet_declaration(snippet: Snippet) -> str:
    """Declare a snippet for ``describe``: its signature, what it does, and its code."""
    doc = snippet.description.replace("*/", "*\\/").strip()
    code = json.dumps(snippet.code[:4000])
    return (
        f"declare namespace snippets {{\n  /** {doc} */\n"
        f"  function {snippet.name}(args?: unknown): Promise<unknown>;\n}}\n"
        f"// its code: {code}"
    )
