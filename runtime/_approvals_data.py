"""What approvals keep: the records, the call log of a code-mode program, the stored blobs.

Blobs (a waiting call's arguments, a batch's later calls, a program's log) are JSON encrypted
with the runtime's AES-GCM key, bound to their thread, role and row; without a key they are
stored in plain text only when they hold no known secret.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal

from ._calls import ParsedCall
from ._result import AttachmentRef, ToolResult
from ._store import dumps
from ._store_approvals import NewApproval
from .errors import SecretKeyError, StoredRunError

if TYPE_CHECKING:
    from ._state import ThreadCore
    from ._tool import Tool

__all__ = [
    "MAX_LOGGED_CALLS",
    "ApprovalDenied",
    "Parked",
    "PendingApproval",
    "approval_context",
    "open_blob",
    "queued_calls",
    "record_call",
    "seal",
    "started",
    "stored_result",
]

#: How many calls a code-mode program's call log keeps (the rest are left out).
MAX_LOGGED_CALLS: Final = 200
#: What a program's calls to revert may keep (their arguments and results, as JSON): past it
#: a call is listed as not revertible (a program cannot make the database hold any size).
MAX_REVERT_BYTES: Final = 1 << 20
#: A logged call's arguments are kept as at most this many characters of JSON.
MAX_LOGGED_ARGUMENT_CHARS: Final = 1024
#: The name of the error a program's call rejects with when its approval is refused.
ApprovalDenied: Final = "ApprovalDenied"
_PLAIN: Final = b"\x00"


@dataclass(frozen=True, slots=True)
class PendingApproval:
    """A call waiting for a decision (``await thread.pending_approvals()``).

    Attributes:
        approval_id: What ``thread.approve`` / ``thread.reject`` take.
        thread_id: The thread it belongs to.
        tool_name: The tool that would run.
        arguments: Its validated arguments, secrets redacted.
        call_id: The waiting call's id (a model's call id, or a code-mode program's call).
        parent_call_id: The code-mode call whose program made the call; None at top level.
        created_at: When it started waiting (Unix time).
    """

    approval_id: str
    thread_id: str
    tool_name: str
    arguments: Any
    call_id: str
    parent_call_id: str | None
    created_at: float


@dataclass(slots=True)
class Parked:
    """A top-level call that is about to wait, collected while it runs (internal)."""

    kind: Literal["tool", "code"]
    tool_name: str
    pause_id: str = field(default_factory=lambda: f"pause_{uuid.uuid4().hex[:24]}")
    approvals: list[NewApproval] = field(default_factory=list)
    continuation: bytes | None = None
    # code mode: the program's call log (the audit trail) and, for tools with a revert, the
    # calls to undo if it is abandoned (their real arguments and results)
    calls: list[dict[str, Any]] = field(default_factory=list)
    made: list[dict[str, Any]] = field(default_factory=list)
    # code mode: the approvals whose calls asked for the whole result ({ raw: true })
    raw: list[str] = field(default_factory=list)


def approval_context(core: ThreadCore, what: str, ident: str) -> bytes:
    """Associated data binding a stored blob to its thread, its role and its row."""
    return json.dumps(["quickjail-approval", what, core.thread_id, ident]).encode()


def seal(core: ThreadCore, value: Any, context: bytes) -> bytes | None:
    """Encrypt ``value`` (JSON) for the database; without a key, plain text unless it holds
    a known secret (then None: it cannot be stored)."""
    data = dumps(value).encode("utf-8", "surrogatepass")
    if core.box is not None:
        return core.box.encrypt_bytes(data, context)
    if core.redactor.value(value) != value:
        return None
    return _PLAIN + data


def open_blob(core: ThreadCore, blob: bytes, context: bytes, what: str) -> Any:
    """Decrypt and parse a stored blob from :func:`_seal`.

    Raises:
        StoredRunError: Wrong key, edited by hand, or stored plain where a key is set.
    """
    if core.box is None:
        if blob[:1] != _PLAIN:
            raise StoredRunError(
                f"the stored {what} is encrypted; it needs Runtime(secret_key=...)"
            )
        data = blob[1:]
    else:
        if blob[:1] == _PLAIN:
            raise StoredRunError(
                f"the stored {what} is in plain text where this runtime encrypts: refused "
                "(edited by hand?)"
            )
        try:
            data = core.box.decrypt_bytes(blob, context)
        except SecretKeyError:
            raise StoredRunError(
                f"the stored {what} fails its check: wrong secret_key, or edited by hand"
            ) from None
    try:
        return json.loads(data.decode("utf-8", "surrogatepass"))
    except ValueError:
        raise StoredRunError(f"the stored {what} is not readable") from None


def record_call(
    core: ThreadCore,
    parent_call_id: str | None,
    tool: Tool,
    call: ParsedCall,
    result: ToolResult,
    seconds: float | None,
    approval: dict[str, Any] | None = None,
) -> None:
    """Add a program's call to its call log (and to the calls to revert, for a successful
    call of a tool with ``revert``); a no-op outside a code-mode call of a thread."""
    from ._thread import stored_arguments

    parked = core.parked.get(parent_call_id) if parent_call_id is not None else None
    if parked is None or parked.kind != "code" or len(parked.calls) >= MAX_LOGGED_CALLS:
        return
    entry: dict[str, Any] = {
        "call_id": call.call_id,
        "tool": call.name,
        "arguments": stored_arguments(core, call.name, call.arguments, MAX_LOGGED_ARGUMENT_CHARS),
        "status": result.status,
        "error": result.error,
        "duration_s": None if seconds is None else round(seconds, 6),
    }
    if approval is not None:
        entry["approval"] = approval
    parked.calls.append(entry)
    if tool.revert is not None and result.ok and call.arguments is not None:
        made: dict[str, Any] = {"call_id": call.call_id, "tool": call.name}
        made.update(arguments=call.arguments, result=result.result)
        size = len(dumps(made))
        if sum(m.get("size", 0) for m in parked.made) + size > MAX_REVERT_BYTES:
            made = {"call_id": call.call_id, "tool": call.name, "dropped": True}
            size = 0
        parked.made.append({**made, "size": size})


def queued_calls(calls: list[ParsedCall]) -> list[dict[str, Any]]:
    out = []
    for c in calls:
        try:
            raw = json.loads(dumps(c.raw_arguments))
        except (TypeError, ValueError):
            raw = None
        out.append(
            {
                "call_id": c.call_id,
                "name": c.name,
                "arguments": c.arguments,
                "raw": raw,
                "error": c.error,
            }
        )
    return out


async def stored_result(core: ThreadCore, call_id: str) -> ToolResult:
    """The stored ``tool_result`` of a call (what a decided approval produced)."""

    def select(conn: sqlite3.Connection) -> Any:
        found = conn.execute(
            "SELECT content FROM messages WHERE thread_id = ? AND kind = 'tool_result' AND "
            "tool_call_id = ? ORDER BY id DESC LIMIT 1",
            (core.thread_id, call_id),
        ).fetchone()
        return None if found is None else json.loads(found[0])

    content = await core.store.transact(core.thread_id, 0, select)
    if not isinstance(content, dict):
        raise StoredRunError(f"no stored result for the decided call {call_id!r}")
    try:
        return ToolResult(
            status=content["status"],
            result=content.get("result"),
            error=content.get("error"),
            stack=content.get("stack"),
            attachments=[AttachmentRef(**a) for a in content.get("attachments") or []],
            call_id=call_id,
        )
    except (KeyError, TypeError, ValueError):
        raise StoredRunError(f"the stored result of call {call_id!r} is not readable") from None


async def started(core: ThreadCore, call_id: str) -> bool:
    """Whether a queued call was started before (its ``tool_call`` message exists)."""

    def select(conn: sqlite3.Connection) -> bool:
        return (
            conn.execute(
                "SELECT 1 FROM messages WHERE thread_id = ? AND kind = 'tool_call' AND "
                "tool_call_id = ? AND parent_call_id IS NULL LIMIT 1",
                (core.thread_id, call_id),
            ).fetchone()
            is not None
        )

    return await core.store.transact(core.thread_id, 0, select)
