"""The SQLite store's table of scheduled jobs."""

from __future__ import annotations

import json

from bot.scheduler.jobs import Job
from bot.storage.sqlite.db import Db


class JobTables:
    """Mixed into :class:`bot.storage.sqlite.store.SqliteStore`."""

    async def put_job(self: Db, job: Job) -> None:
        """Add ``job``, or replace the job with the same id."""
        async with self.transaction() as db:
            await db.execute(
                "INSERT INTO jobs (id, kind, payload, due_at, interval_s, attempts, last_error)"
                " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET kind = excluded.kind,"
                " payload = excluded.payload, due_at = excluded.due_at,"
                " interval_s = excluded.interval_s, attempts = excluded.attempts,"
                " last_error = excluded.last_error",
                (
                    job.id,
                    job.kind,
                    json.dumps(job.payload),
                    job.due_at,
                    job.interval_s,
                    job.attempts,
                    job.last_error,
                ),
            )

    async def due_jobs(self: Db, now: float, limit: int = 100) -> list[Job]:
        async with self.db.execute(
            "SELECT id, kind, payload, due_at, interval_s, attempts, last_error FROM jobs"
            " WHERE due_at <= ? ORDER BY due_at LIMIT ?",
            (now, limit),
        ) as cur:
            rows = await cur.fetchall()
        return [Job(r[0], r[1], r[3], json.loads(r[2]), r[4], r[5], r[6]) for r in rows]

    async def claim_due_jobs(self: Db, now: float, hold_s: float, limit: int = 100) -> list[Job]:
        """Due jobs, each claimed by pushing its due time ``hold_s`` ahead (one process: the
        claim only keeps a job that fails to finish from running again at once)."""
        async with self.transaction() as db:
            async with db.execute(
                "SELECT id, kind, payload, due_at, interval_s, attempts, last_error FROM jobs"
                " WHERE due_at <= ? ORDER BY due_at LIMIT ?",
                (now, limit),
            ) as cur:
                rows = await cur.fetchall()
            if rows:
                await db.executemany(
                    "UPDATE jobs SET due_at = ? WHERE id = ?", [(now + hold_s, r[0]) for r in rows]
                )
        return [Job(r[0], r[1], r[3], json.loads(r[2]), r[4], r[5], r[6]) for r in rows]

    async def next_due(self: Db) -> float | None:
        async with self.db.execute("SELECT MIN(due_at) FROM jobs") as cur:
            row = await cur.fetchone()
        return float(row[0]) if row and row[0] is not None else None

    async def delete_job(self: Db, job_id: str) -> None:
        async with self.transaction() as db:
            await db.execute("DELETE FROM jobs WHERE id = ?", (job_id,))
