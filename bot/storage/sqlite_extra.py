"""The SQLite store's tables for approvals, allow rules and scheduled jobs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

import aiosqlite

from bot.approvals.models import ApprovalRequest, ApprovalStatus, Approvers
from bot.scheduler.jobs import Job

_APPROVAL_COLUMNS = (
    "id, key, call_id, tool, arguments, args_hash, requester_id, requester_name, approvers,"
    " offer_always, status, decided_by_id, decided_by_name, decided_at, created_at, expires_at,"
    " card_id"
)


class _Db(Protocol):
    @property
    def db(self) -> aiosqlite.Connection: ...

    def transaction(self) -> AbstractAsyncContextManager[aiosqlite.Connection]: ...


def _approval(row: Sequence[Any]) -> ApprovalRequest:
    return ApprovalRequest(
        id=row[0],
        key=row[1],
        call_id=row[2],
        tool=row[3],
        arguments=row[4],
        args_hash=row[5],
        requester_id=row[6],
        requester_name=row[7],
        approvers=Approvers.from_json(row[8]),
        offer_always=bool(row[9]),
        status=ApprovalStatus(row[10]),
        decided_by_id=row[11],
        decided_by_name=row[12],
        decided_at=row[13],
        created_at=row[14],
        expires_at=row[15],
        card_id=row[16],
    )


class ApprovalTables:
    """Mixed into :class:`bot.storage.sqlite.SqliteStore`."""

    async def create_approval(self: _Db, request: ApprovalRequest) -> None:
        async with self.transaction() as db:
            await db.execute(
                f"INSERT INTO approvals ({_APPROVAL_COLUMNS}) VALUES"
                " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    request.id, request.key, request.call_id, request.tool, request.arguments,
                    request.args_hash, request.requester_id, request.requester_name,
                    request.approvers.to_json(), int(request.offer_always), request.status.value,
                    request.decided_by_id, request.decided_by_name, request.decided_at,
                    request.created_at, request.expires_at, request.card_id,
                ),
            )  # fmt: skip

    async def get_approval(self: _Db, approval_id: str) -> ApprovalRequest | None:
        async with self.db.execute(
            f"SELECT {_APPROVAL_COLUMNS} FROM approvals WHERE id = ?", (approval_id,)
        ) as cur:
            row = await cur.fetchone()
        return _approval(row) if row else None

    async def approvals_for(self: _Db, key: str, call_ids: Sequence[str]) -> dict[str, ApprovalRequest]:
        """The thread's approval requests for these calls, by call id."""
        if not call_ids:
            return {}
        marks = ", ".join("?" * len(call_ids))
        async with self.db.execute(
            f"SELECT {_APPROVAL_COLUMNS} FROM approvals WHERE key = ? AND call_id IN ({marks})",
            (key, *call_ids),
        ) as cur:
            rows = await cur.fetchall()
        found = [_approval(r) for r in rows]
        return {a.call_id: a for a in found}

    async def decide_approval(
        self: _Db,
        approval_id: str,
        status: ApprovalStatus,
        by_id: str | None,
        by_name: str | None,
        now: float,
    ) -> bool:
        """Record a decision once: only a pending request changes (and, unless this is the
        expiry itself, only before it expires). Returns whether this call changed it."""
        async with self.transaction() as db:
            cur = await db.execute(
                "UPDATE approvals SET status = ?, decided_by_id = ?, decided_by_name = ?,"
                " decided_at = ? WHERE id = ? AND status = 'pending' AND (? OR expires_at > ?)",
                (status.value, by_id, by_name, now, approval_id, status is ApprovalStatus.EXPIRED, now),
            )
            return cur.rowcount == 1

    async def set_approval_card(self: _Db, approval_id: str, card_id: str) -> None:
        async with self.transaction() as db:
            await db.execute("UPDATE approvals SET card_id = ? WHERE id = ?", (card_id, approval_id))

    async def add_allow_rule(self: _Db, scope: str, tool: str, by: str, now: float) -> None:
        async with self.transaction() as db:
            await db.execute(
                "INSERT INTO allow_rules (scope, tool, created_by, created_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (scope, tool) DO NOTHING",
                (scope, tool, by, now),
            )

    async def is_allowed(self: _Db, scope: str, tool: str) -> bool:
        async with self.db.execute(
            "SELECT 1 FROM allow_rules WHERE scope = ? AND tool = ?", (scope, tool)
        ) as cur:
            return await cur.fetchone() is not None


class JobTables:
    """Mixed into :class:`bot.storage.sqlite.SqliteStore`."""

    async def put_job(self: _Db, job: Job) -> None:
        """Add ``job``, or replace the job with the same id."""
        async with self.transaction() as db:
            await db.execute(
                "INSERT INTO jobs (id, kind, payload, due_at, interval_s, attempts, last_error)"
                " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET kind = excluded.kind,"
                " payload = excluded.payload, due_at = excluded.due_at,"
                " interval_s = excluded.interval_s, attempts = excluded.attempts,"
                " last_error = excluded.last_error",
                (job.id, job.kind, json.dumps(job.payload), job.due_at, job.interval_s,
                 job.attempts, job.last_error),
            )  # fmt: skip

    async def due_jobs(self: _Db, now: float, limit: int = 100) -> list[Job]:
        async with self.db.execute(
            "SELECT id, kind, payload, due_at, interval_s, attempts, last_error FROM jobs"
            " WHERE due_at <= ? ORDER BY due_at LIMIT ?",
            (now, limit),
        ) as cur:
            rows = await cur.fetchall()
        return [Job(r[0], r[1], r[3], json.loads(r[2]), r[4], r[5], r[6]) for r in rows]

    async def next_due(self: _Db) -> float | None:
        async with self.db.execute("SELECT MIN(due_at) FROM jobs") as cur:
            row = await cur.fetchone()
        return float(row[0]) if row and row[0] is not None else None

    async def delete_job(self: _Db, job_id: str) -> None:
        async with self.transaction() as db:
            await db.execute("DELETE FROM jobs WHERE id = ?", (job_id,))


