"""The PostgreSQL store's table of scheduled jobs."""

from __future__ import annotations

import json

from bot.scheduler.jobs import Job
from bot.storage.postgres.db import PgDb


class JobTables:
    """Mixed into :class:`bot.storage.postgres.store.PostgresStore`."""

    async def put_job(self: PgDb, job: Job) -> None:
        """Add ``job``, or replace the job with the same id."""
        await self.pool.execute(
            "INSERT INTO jobs (id, kind, payload, due_at, interval_s, attempts, last_error)"
            " VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO UPDATE SET kind = excluded.kind,"
            " payload = excluded.payload, due_at = excluded.due_at,"
            " interval_s = excluded.interval_s, attempts = excluded.attempts,"
            " last_error = excluded.last_error",
            job.id,
            job.kind,
            json.dumps(job.payload),
            job.due_at,
            job.interval_s,
            job.attempts,
            job.last_error,
        )

    async def due_jobs(self: PgDb, now: float, limit: int = 100) -> list[Job]:
        rows = await self.pool.fetch(
            "SELECT id, kind, payload, due_at, interval_s, attempts, last_error FROM jobs"
            " WHERE due_at <= $1 ORDER BY due_at, id LIMIT $2",
            now,
            limit,
        )
        return [Job(r[0], r[1], r[3], json.loads(r[2]), r[4], r[5], r[6]) for r in rows]

    async def claim_due_jobs(self: PgDb, now: float, hold_s: float, limit: int = 100) -> list[Job]:
        """Due jobs, each claimed by pushing its due time ``hold_s`` ahead, in one statement:
        rows another worker is claiming are skipped (``FOR UPDATE SKIP LOCKED``), so of several
        workers waking together each job goes to one."""
        rows = await self.pool.fetch(
            "WITH due AS (SELECT id, due_at FROM jobs WHERE due_at <= $1 ORDER BY due_at, id"
            " LIMIT $2 FOR UPDATE SKIP LOCKED)"
            " UPDATE jobs SET due_at = $1 + $3 FROM due WHERE jobs.id = due.id"
            " RETURNING jobs.id, jobs.kind, jobs.payload, due.due_at, jobs.interval_s,"
            " jobs.attempts, jobs.last_error",
            now,
            limit,
            hold_s,
        )
        jobs = [Job(r[0], r[1], r[3], json.loads(r[2]), r[4], r[5], r[6]) for r in rows]
        return sorted(jobs, key=lambda j: (j.due_at, j.id))

    async def next_due(self: PgDb) -> float | None:
        due = await self.pool.fetchval("SELECT MIN(due_at) FROM jobs")
        return float(due) if due is not None else None

    async def delete_job(self: PgDb, job_id: str) -> None:
        await self.pool.execute("DELETE FROM jobs WHERE id = $1", job_id)
