"""The PostgreSQL store's scheduled prompts (each with its job in ``jobs``).

The limits per thread and per channel are checked and the schedule added in one transaction
that holds the channel's advisory lock, so concurrent requests never pass a limit.
"""

from __future__ import annotations

import dataclasses
import json

from bot.api.inbound import ThreadKey
from bot.llm.messages import UserMessage, dump_message
from bot.scheduler.schedules import Full, Schedule, job_for
from bot.storage import rows as stored
from bot.storage.postgres.batch import CALLS, AsOne
from bot.storage.postgres.db import PgDb
from bot.storage.postgres.sessions import ACCEPT, changed

_COLUMNS = (
    "id, key, channel, prompt, when_text, cron, zone, next_at, author_id, author_name, created_at"
)
_OF_THREADS = AsOne(
    f"SELECT {_COLUMNS}, (c.n - 1)::int AS call FROM unnest($1::text[]) "
    + CALLS.format("k")
    + " JOIN schedules ON schedules.key = c.k AND schedules.key = ANY($1::text[])"  # by the index
    + " ORDER BY c.n, next_at, id"
)
"""The schedules of a batch of threads in one statement."""


class ScheduleTables:
    """Mixed into :class:`bot.storage.postgres.store.PostgresStore`."""

    async def add_schedule(
        self: PgDb, draft: Schedule, *, per_thread: int, per_channel: int
    ) -> Schedule | Full:
        d = draft
        async with self.transaction() as db:
            await db.execute(
                "SELECT pg_advisory_xact_lock(hashtext('schedules:' || $1))", d.channel
            )
            in_thread = await db.fetchval("SELECT COUNT(*) FROM schedules WHERE key = $1", d.key)
            in_channel = await db.fetchval(
                "SELECT COUNT(*) FROM schedules WHERE channel = $1", d.channel
            )
            if in_thread >= per_thread:
                return "thread"
            if in_channel >= per_channel:
                return "channel"
            number = await db.fetchval(
                f"INSERT INTO schedules ({_COLUMNS.removeprefix('id, ')})"
                " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id",
                d.key,
                d.channel,
                d.prompt,
                d.when,
                d.cron,
                d.zone,
                d.next_at,
                d.author_id,
                d.author_name,
                d.created_at,
            )
            added = dataclasses.replace(d, id=f"s{number}")
            job = job_for(added)
            await db.execute(
                "INSERT INTO jobs (id, kind, payload, due_at) VALUES ($1, $2, $3, $4)"
                " ON CONFLICT (id) DO UPDATE SET kind = excluded.kind, payload = excluded.payload,"
                " due_at = excluded.due_at, attempts = 0, last_error = NULL",
                job.id,
                job.kind,
                json.dumps(job.payload),
                job.due_at,
            )
        return added

    async def get_schedule(self: PgDb, schedule_id: str) -> Schedule | None:
        number = stored.number(schedule_id, "s")
        if number is None:
            return None
        row = await self.pool.fetchrow(f"SELECT {_COLUMNS} FROM schedules WHERE id = $1", number)
        return stored.schedule(row) if row else None

    async def schedules_of(self: PgDb, key: str) -> list[Schedule]:
        rows = await self.gathered("schedules_of", _OF_THREADS, rows=True).fetch(key, key)
        return [stored.schedule(tuple(r)[:-1]) for r in rows]  # without the call

    async def claim_schedule(
        self: PgDb,
        schedule_id: str,
        due_at: float,
        next_at: float | None,
        arrival: tuple[ThreadKey, UserMessage] | None = None,
    ) -> bool:
        number = stored.number(schedule_id, "s")
        if number is None:
            return False
        async with self.transaction() as db:
            if next_at is None:
                status = await db.execute(
                    "DELETE FROM schedules WHERE id = $1 AND next_at = $2", number, due_at
                )
            else:
                status = await db.execute(
                    "UPDATE schedules SET next_at = $1 WHERE id = $2 AND next_at = $3",
                    next_at,
                    number,
                    due_at,
                )
            if changed(status) != 1:
                return False
            if arrival is not None:
                key, message = arrival
                call = (message.event_id, due_at, key, dump_message(message), None)
                await db.execute(ACCEPT.sql, *ACCEPT.args([call]))
        return True

    async def delete_schedule(self: PgDb, key: str, schedule_id: str) -> Schedule | None:
        number = stored.number(schedule_id, "s")
        if number is None:
            return None
        async with self.transaction() as db:
            row = await db.fetchrow(
                f"DELETE FROM schedules WHERE id = $1 AND key = $2 RETURNING {_COLUMNS}",
                number,
                key,
            )
            if row is None:
                return None
            removed = stored.schedule(row)
            await db.execute("DELETE FROM jobs WHERE id = $1", job_for(removed).id)
        return removed
