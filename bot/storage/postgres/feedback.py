"""The PostgreSQL store's feedback: one row per run and person, replaced by a later click."""

from __future__ import annotations

from typing import Any

from bot.api.inbound import ThreadKey
from bot.feedback.model import Feedback, Recorded
from bot.storage.postgres.db import PgDb

_COLUMNS = "run_id, key, user_id, user_name, value, at, note"


class FeedbackTables:
    """Mixed into :class:`bot.storage.postgres.store.PostgresStore`."""

    async def record_feedback(self: PgDb, feedback: Feedback) -> Recorded:
        f = feedback
        async with self.transaction() as db:
            before = await db.fetchval(
                "SELECT value FROM feedback WHERE run_id = $1 AND user_id = $2 FOR UPDATE",
                f.run_id,
                f.user_id,
            )
            await db.execute(
                f"INSERT INTO feedback ({_COLUMNS}, closed)"
                " VALUES ($1, $2, $3, $4, $5, $6, $7, false)"
                " ON CONFLICT (run_id, user_id) DO UPDATE SET user_name = excluded.user_name,"
                " at = excluded.at, closed = false,"
                " note = CASE WHEN feedback.value = excluded.value THEN feedback.note ELSE '' END,"
                " value = excluded.value",
                f.run_id,
                f.key,
                f.user_id,
                f.user_name,
                f.value,
                f.at,
                f.note,
            )
        if before is None:
            return "new"
        return "same" if before == f.value else "changed"

    async def note_feedback(self: PgDb, run_id: str, user_id: str, note: str) -> bool:
        async with self.transaction() as db:
            status = await db.execute(
                "UPDATE feedback SET note = $1 WHERE run_id = $2 AND user_id = $3"
                " AND value = 'down' AND NOT closed",
                note,
                run_id,
                user_id,
            )
        return str(status).endswith(" 1")

    async def close_feedback(self: PgDb, key: ThreadKey) -> None:
        async with self.transaction() as db:
            await db.execute("UPDATE feedback SET closed = true WHERE key = $1", key)

    async def feedback_since(self: PgDb, since: float, limit: int) -> list[Feedback]:
        rows = await self.pool.fetch(
            f"SELECT {_COLUMNS} FROM feedback WHERE at >= $1 ORDER BY at, run_id, user_id LIMIT $2",
            since,
            limit,
        )
        return [_feedback(row) for row in rows]


def _feedback(row: Any) -> Feedback:
    return Feedback(
        run_id=row["run_id"],
        key=ThreadKey(row["key"]),
        user_id=row["user_id"],
        user_name=row["user_name"],
        value="up" if row["value"] == "up" else "down",
        at=float(row["at"]),
        note=row["note"],
    )
