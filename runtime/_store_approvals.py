"""The database side of approvals: the tables (migration 3) and their row functions.

Two tables. A *pause* is a top-level call of a batch that waits: a tool call waiting for its
approval (``kind="tool"``), or a code-mode call whose program is paused (``kind="code"``,
with its continuation). It keeps the batch's later calls (``payload``, encrypted). An
*approval* is one call waiting for a decision; a code-mode pause has one per call its
program made to a tool that needs approval.

Every function here runs inside one ``BEGIN IMMEDIATE`` transaction of :class:`Store`, so a
state change is atomic and serialized across processes sharing the file: a decision is a
compare-and-set on ``approvals.state``, which is why a second decision (in this process or
another) finds the row decided and is refused.

Approval states: ``pending`` → ``approved`` (decided, not started) → ``running`` (the tool
was entered) → ``settled`` (its result stored, with the tool's result message, in one
transaction); a rejection goes ``pending`` → ``settled`` at once. Pause states: ``waiting``
→ ``resuming`` (code mode: the program is being resumed) → ``resumed`` (its outcome stored)
→ ``closed`` (the batch's later calls done); a program that pauses again goes back to
``waiting`` with its new continuation. ``waiting`` → ``ending`` → ``closed`` when it expires
or is abandoned.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from .errors import ApprovalDecidedError, UnknownApprovalError

__all__ = [
    "MIGRATION_V3",
    "ApprovalRow",
    "NewApproval",
    "PauseRow",
    "claim_approval",
    "close_pause",
    "ending_pause",
    "expired_pauses",
    "find_approval",
    "insert_pause",
    "mark_running",
    "resumed_pause",
    "resuming_pause",
    "select_approvals",
    "select_pause",
    "select_pauses",
    "settle_approval",
    "stored_approval_bytes",
]

MIGRATION_V3: Final = (
    """CREATE TABLE pauses (
        id TEXT PRIMARY KEY,
        thread_id TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
        call_id TEXT NOT NULL,
        tool_name TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('tool', 'code')),
        state TEXT NOT NULL
            CHECK (state IN ('waiting', 'resuming', 'resumed', 'ending', 'closed')),
        payload BLOB NOT NULL,
        continuation BLOB,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL
    )""",
    "CREATE INDEX pauses_by_thread ON pauses(thread_id, state)",
    """CREATE TABLE approvals (
        id TEXT PRIMARY KEY,
        thread_id TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
        pause_id TEXT NOT NULL REFERENCES pauses(id) ON DELETE CASCADE,
        call_id TEXT NOT NULL,
        parent_call_id TEXT,
        run_call INTEGER,
        tool_name TEXT NOT NULL,
        arguments TEXT NOT NULL,
        sealed_arguments BLOB NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('pending', 'approved', 'running', 'settled')),
        decision TEXT,
        reason TEXT,
        decided_by TEXT,
        outcome TEXT,
        created_at REAL NOT NULL,
        decided_at REAL
    )""",
    "CREATE INDEX approvals_by_pause ON approvals(pause_id)",
    "CREATE INDEX approvals_by_thread ON approvals(thread_id, state)",
)

#: What the two tables add to a thread's stored bytes (for its quota).
stored_approval_bytes: Final = (
    "(SELECT coalesce(sum(length(payload) + coalesce(length(continuation), 0)), 0) FROM pauses "
    "WHERE thread_id = ?1) + (SELECT coalesce(sum(length(CAST(arguments AS BLOB)) + "
    "length(sealed_arguments) + coalesce(length(CAST(outcome AS BLOB)), 0)), 0) FROM "
    "approvals WHERE thread_id = ?1)"
)


@dataclass(frozen=True, slots=True)
class NewApproval:
    """A call about to wait: ``arguments`` redacted for people, ``sealed`` the real ones."""

    id: str
    call_id: str
    parent_call_id: str | None
    tool_name: str
    arguments: Any
    sealed: bytes
    run_call: int | None = None


@dataclass(frozen=True, slots=True)
class ApprovalRow:
    """A stored approval (see the module docstring for ``state``)."""

    id: str
    thread_id: str
    pause_id: str
    call_id: str
    parent_call_id: str | None
    run_call: int | None
    tool_name: str
    arguments: Any
    sealed: bytes
    state: str
    decision: str | None
    reason: str | None
    decided_by: str | None
    outcome: Any
    created_at: float
    decided_at: float | None


@dataclass(frozen=True, slots=True)
class PauseRow:
    """A stored pause: the waiting top-level call, the batch's rest, a paused program."""

    id: str
    thread_id: str
    call_id: str
    tool_name: str
    kind: str
    state: str
    payload: bytes
    continuation: bytes | None
    created_at: float


_APPROVAL_COLUMNS: Final = (
    "id, thread_id, pause_id, call_id, parent_call_id, run_call, tool_name, arguments, "
    "sealed_arguments, state, decision, reason, decided_by, outcome, created_at, decided_at"
)
_PAUSE_COLUMNS: Final = (
    "id, thread_id, call_id, tool_name, kind, state, payload, continuation, created_at"
)


def _approval(row: Sequence[Any]) -> ApprovalRow:
    return ApprovalRow(
        id=row[0],
        thread_id=row[1],
        pause_id=row[2],
        call_id=row[3],
        parent_call_id=row[4],
        run_call=row[5],
        tool_name=row[6],
        arguments=json.loads(row[7]),
        sealed=bytes(row[8]),
        state=row[9],
        decision=row[10],
        reason=row[11],
        decided_by=row[12],
        outcome=None if row[13] is None else json.loads(row[13]),
        created_at=row[14],
        decided_at=row[15],
    )


def _pause(row: Sequence[Any]) -> PauseRow:
    return PauseRow(
        id=row[0],
        thread_id=row[1],
        call_id=row[2],
        tool_name=row[3],
        kind=row[4],
        state=row[5],
        payload=bytes(row[6]),
        continuation=None if row[7] is None else bytes(row[7]),
        created_at=row[8],
    )


def insert_pause(
    pause: PauseRow,
    approvals: Sequence[NewApproval],
    replaces: str | None,
    conn: sqlite3.Connection,
) -> None:
    """Store a pause and its approvals; close ``replaces`` (the pause whose batch this one
    continues) in the same transaction, so the batch's rest is never owned by two pauses.

    A code-mode pause that pauses again (same id) replaces its continuation and goes back to
    ``waiting``.
    """
    now = time.time()
    conn.execute(
        "INSERT INTO pauses (id, thread_id, call_id, tool_name, kind, state, payload, "
        "continuation, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'waiting', ?, ?, ?, ?) "
        "ON CONFLICT (id) DO UPDATE SET state = 'waiting', continuation = excluded.continuation,"
        " payload = excluded.payload, updated_at = excluded.updated_at",
        (
            pause.id,
            pause.thread_id,
            pause.call_id,
            pause.tool_name,
            pause.kind,
            pause.payload,
            pause.continuation,
            now,
            now,
        ),
    )
    # the calls of an earlier leg of the program were answered: only the new ones are paused
    conn.execute(
        "UPDATE approvals SET run_call = NULL WHERE pause_id = ? AND state = 'settled'",
        (pause.id,),
    )
    conn.executemany(
        "INSERT INTO approvals (id, thread_id, pause_id, call_id, parent_call_id, run_call, "
        "tool_name, arguments, sealed_arguments, state, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?)",
        [
            (
                a.id,
                pause.thread_id,
                pause.id,
                a.call_id,
                a.parent_call_id,
                a.run_call,
                a.tool_name,
                json.dumps(a.arguments, ensure_ascii=True, allow_nan=False),
                a.sealed,
                now,
            )
            for a in approvals
        ],
    )
    if replaces is not None and replaces != pause.id:
        close_pause(replaces, conn)


def close_pause(pause_id: str, conn: sqlite3.Connection) -> None:
    """Close a pause: its batch is done, and its continuation (guest memory) is deleted."""
    conn.execute(
        "UPDATE pauses SET state = 'closed', continuation = NULL, updated_at = ? WHERE id = ?",
        (time.time(), pause_id),
    )


def find_approval(thread_id: str, approval_id: str, conn: sqlite3.Connection) -> ApprovalRow:
    row = conn.execute(
        f"SELECT {_APPROVAL_COLUMNS} FROM approvals WHERE id = ? AND thread_id = ?",
        (approval_id, thread_id),
    ).fetchone()
    if row is None:
        raise UnknownApprovalError(f"no approval {approval_id!r} on thread {thread_id!r}")
    return _approval(row)


def claim_approval(
    thread_id: str,
    approval_id: str,
    decision: str,
    reason: str | None,
    decided_by: str | None,
    outcome: Any,
    conn: sqlite3.Connection,
) -> ApprovalRow:
    """Decide a pending approval (compare-and-set): ``approved`` → state ``approved``;
    ``rejected`` → state ``settled`` with its ``outcome``.

    Raises:
        UnknownApprovalError: No such approval on this thread.
        ApprovalDecidedError: It was decided already (nothing changes).
    """
    found = find_approval(thread_id, approval_id, conn)
    if found.state != "pending":
        raise ApprovalDecidedError(
            f"approval {approval_id!r} was decided already ({found.decision}); "
            "an approval is decided once"
        )
    state = "approved" if decision == "approved" else "settled"
    text = None if outcome is None else json.dumps(outcome, ensure_ascii=True, allow_nan=False)
    conn.execute(
        "UPDATE approvals SET state = ?, decision = ?, reason = ?, decided_by = ?, outcome = ?, "
        "decided_at = ? WHERE id = ? AND state = 'pending'",
        (state, decision, reason, decided_by, text, time.time(), approval_id),
    )
    return find_approval(thread_id, approval_id, conn)


def mark_running(approval_id: str, conn: sqlite3.Connection) -> bool:
    """``approved`` → ``running``, just before the tool is entered; False if not approved."""
    cursor = conn.execute(
        "UPDATE approvals SET state = 'running' WHERE id = ? AND state = 'approved'",
        (approval_id,),
    )
    return cursor.rowcount == 1


def settle_approval(
    approval_id: str,
    outcome: Any,
    decision: str | None,
    conn: sqlite3.Connection,
) -> None:
    """Store the approved call's outcome (``running`` → ``settled``); ``decision`` replaces
    the stored one when given (``"interrupted"``).

    Raises:
        ApprovalDecidedError: It is not running (settled by someone else).
    """
    text = json.dumps(outcome, ensure_ascii=True, allow_nan=False)
    cursor = conn.execute(
        "UPDATE approvals SET state = 'settled', outcome = ?, decision = coalesce(?, decision) "
        "WHERE id = ? AND state = 'running'",
        (text, decision, approval_id),
    )
    if cursor.rowcount != 1:
        raise ApprovalDecidedError(f"approval {approval_id!r} was settled already")


def resuming_pause(pause_id: str, conn: sqlite3.Connection) -> bool:
    """``waiting`` → ``resuming`` for a code-mode pause; False if it is not waiting."""
    cursor = conn.execute(
        "UPDATE pauses SET state = 'resuming', updated_at = ? WHERE id = ? AND state = 'waiting'",
        (time.time(), pause_id),
    )
    return cursor.rowcount == 1


def ending_pause(pause_id: str, conn: sqlite3.Connection) -> bool:
    """``waiting`` → ``ending`` (expired or abandoned); False if it is not waiting, or one of
    its approvals was decided for running (``approved``/``running``)."""
    busy = conn.execute(
        "SELECT 1 FROM approvals WHERE pause_id = ? AND state IN ('approved', 'running')",
        (pause_id,),
    ).fetchone()
    if busy is not None:
        return False
    cursor = conn.execute(
        "UPDATE pauses SET state = 'ending', updated_at = ? WHERE id = ? AND state = 'waiting'",
        (time.time(), pause_id),
    )
    return cursor.rowcount == 1


def expired_pauses(thread_id: str, before: float, conn: sqlite3.Connection) -> list[str]:
    """The waiting pauses of a thread with an approval pending since before ``before``."""
    rows = conn.execute(
        "SELECT DISTINCT p.id FROM pauses p JOIN approvals a ON a.pause_id = p.id "
        "WHERE p.thread_id = ? AND p.state = 'waiting' AND a.state = 'pending' "
        "AND a.created_at < ?",
        (thread_id, before),
    ).fetchall()
    return [row[0] for row in rows]


def resumed_pause(pause_id: str, conn: sqlite3.Connection) -> None:
    """``resuming`` → ``resumed``: the program's outcome is stored (same transaction)."""
    conn.execute(
        "UPDATE pauses SET state = 'resumed', continuation = NULL, updated_at = ? WHERE id = ?",
        (time.time(), pause_id),
    )


def select_approvals(
    thread_id: str, pause_id: str | None, state: str | None, conn: sqlite3.Connection
) -> list[ApprovalRow]:
    """The thread's approvals (of one pause, in one state, when given), oldest first."""
    query = f"SELECT {_APPROVAL_COLUMNS} FROM approvals WHERE thread_id = ?"
    params: list[Any] = [thread_id]
    if pause_id is not None:
        query += " AND pause_id = ?"
        params.append(pause_id)
    if state is not None:
        query += " AND state = ?"
        params.append(state)
    rows = conn.execute(query + " ORDER BY created_at, rowid", params).fetchall()
    return [_approval(row) for row in rows]


def select_pause(thread_id: str, pause_id: str, conn: sqlite3.Connection) -> PauseRow | None:
    """One pause of the thread, or None."""
    row = conn.execute(
        f"SELECT {_PAUSE_COLUMNS} FROM pauses WHERE id = ? AND thread_id = ?",
        (pause_id, thread_id),
    ).fetchone()
    return None if row is None else _pause(row)


def select_pauses(thread_id: str, conn: sqlite3.Connection) -> list[PauseRow]:
    """The thread's pauses that are not closed, oldest first."""
    rows = conn.execute(
        f"SELECT {_PAUSE_COLUMNS} FROM pauses WHERE thread_id = ? AND state != 'closed' "
        "ORDER BY created_at, rowid",
        (thread_id,),
    ).fetchall()
    return [_pause(row) for row in rows]
