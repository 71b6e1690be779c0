"""The SQLite store's table of scheduled prompts (each with its job in ``jobs``)."""

from __future__ import annotations

import dataclasses
import json

import aiosqlite

from bot.api.inbound import ThreadKey
from bot.llm.messages import UserMessage
from bot.scheduler.schedules import Full, Schedule, job_for
from bot.storage import rows as stored
from bot.storage.sqlite.db import Db
from bot.storage.sqlite.sessions import keep

_COLUMNS = (
    "id, key, channel, prompt, when_text, cron, zone, next_at, author_id, author_name, created_at"
)


class ScheduleTables:
    """Mixed into :class:`bot.storage.sqlite.store.SqliteStore`."""

    async def add_schedule(
        self: Db, draft: Schedule, *, per_thread: int, per_channel: int
    ) -> Schedule | Full:
        d = draft
        async with self.transaction() as db:
            cursor = await db.execute(
                f"INSERT INTO schedules ({_COLUMNS.removeprefix('id, ')})"
                " SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?"
                " WHERE (SELECT COUNT(*) FROM schedules WHERE key = ?) < ?"
                " AND (SELECT COUNT(*) FROM schedules WHERE channel = ?) < ?",
                (
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
                    d.key,
                    per_thread,
                    d.channel,
                    per_channel,
                ),
            )
            if cursor.rowcount != 1 or cursor.lastrowid is None:
                return await _which_limit(db, d, per_thread)
            added = dataclasses.replace(d, id=f"s{cursor.lastrowid}")
            job = job_for(added)
            await db.execute(
                "INSERT INTO jobs (id, kind, payload, due_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (id) DO UPDATE SET kind = excluded.kind, payload = excluded.payload,"
                " due_at = excluded.due_at, attempts = 0, last_error = NULL",
                (job.id, job.kind, json.dumps(job.payload), job.due_at),
            )
        return added

    async def get_schedule(self: Db, schedule_id: str) -> Schedule | None:
        number = stored.number(schedule_id, "s")
        if number is None:
            return None
        async with self.db.execute(
            f"SELECT {_COLUMNS} FROM schedules WHERE id = ?", (number,)
        ) as cur:
            row = await cur.fetchone()
        return stored.schedule(row) if row else None

    async def schedules_of(self: Db, key: str) -> list[Schedule]:
        async with self.db.execute(
            f"SELECT {_COLUMNS} FROM schedules WHERE key = ? ORDER BY next_at, id", (key,)
        ) as cur:
            return [stored.schedule(r) for r in await cur.fetchall()]

    async def claim_schedule(
        self: Db,
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
                cursor = await db.execute(
                    "DELETE FROM schedules WHERE id = ? AND next_at = ?", (number, due_at)
                )
            else:
                cursor = await db.execute(
                    "UPDATE schedules SET next_at = ? WHERE id = ? AND next_at = ?",
                    (next_at, number, due_at),
                )
            if cursor.rowcount != 1:
                return False
            if arrival is not None:
                await keep(db, *arrival, due_at)
            return True

    async def delete_schedule(self: Db, key: str, schedule_id: str) -> Schedule | None:
        number = stored.number(schedule_id, "s")
        if number is None:
            return None
        async with self.transaction() as db:
            async with db.execute(
                f"DELETE FROM schedules WHERE id = ? AND key = ? RETURNING {_COLUMNS}",
                (number, key),
            ) as cur:
                row = await cur.fetchone()
            if row is None:
                return None
            removed = stored.schedule(row)
            await db.execute("DELETE FROM jobs WHERE id = ?", (job_for(removed).id,))
        return removed


async def _which_limit(db: aiosqlite.Connection, draft: Schedule, per_thread: int) -> Full:
    async with db.execute("SELECT COUNT(*) FROM schedules WHERE key = ?", (draft.key,)) as cur:
        row = await cur.fetchone()
    return "thread" if row is not None and row[0] >= per_thread else "channel"
