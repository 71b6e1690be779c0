"""The SQLite store's feedback: one row per run and person, replaced by a later click."""

from __future__ import annotations

from bot.api.inbound import ThreadKey
from bot.feedback.model import Feedback, Recorded
from bot.storage.sqlite.db import Db

_COLUMNS = "run_id, key, user_id, user_name, value, at, note"


class FeedbackTables:
    """Mixed into :class:`bot.storage.sqlite.store.SqliteStore`."""

    async def record_feedback(self: Db, feedback: Feedback) -> Recorded:
        f = feedback
        async with self.transaction() as db:
            async with db.execute(
                "SELECT value FROM feedback WHERE run_id = ? AND user_id = ?",
                (f.run_id, f.user_id),
            ) as cur:
                row = await cur.fetchone()
            await db.execute(
                f"INSERT INTO feedback ({_COLUMNS}, closed) VALUES (?, ?, ?, ?, ?, ?, ?, 0)"
                " ON CONFLICT (run_id, user_id) DO UPDATE SET user_name = excluded.user_name,"
                " at = excluded.at, closed = 0,"
                " note = CASE WHEN feedback.value = excluded.value THEN feedback.note ELSE '' END,"
                " value = excluded.value",
                (f.run_id, f.key, f.user_id, f.user_name, f.value, f.at, f.note),
            )
        if row is None:
            return "new"
        return "same" if row[0] == f.value else "changed"

    async def note_feedback(self: Db, run_id: str, user_id: str, note: str) -> bool:
        async with self.transaction() as db:
            cursor = await db.execute(
                "UPDATE feedback SET note = ? WHERE run_id = ? AND user_id = ?"
                " AND value = 'down' AND closed = 0",
                (note, run_id, user_id),
            )
            return cursor.rowcount == 1

    async def close_feedback(self: Db, key: ThreadKey) -> None:
        async with self.transaction() as db:
            await db.execute("UPDATE feedback SET closed = 1 WHERE key = ?", (key,))

    async def feedback_since(self: Db, since: float, limit: int) -> list[Feedback]:
        async with self.db.execute(
            f"SELECT {_COLUMNS} FROM feedback WHERE at >= ? ORDER BY at, run_id, user_id LIMIT ?",
            (since, limit),
        ) as cur:
            rows = await cur.fetchall()
        return [_feedback(tuple(row)) for row in rows]


def _feedback(row: tuple[object, ...]) -> Feedback:
    run_id, key, user_id, user_name, value, at, note = row
    return Feedback(
        run_id=str(run_id),
        key=ThreadKey(str(key)),
        user_id=str(user_id),
        user_name=str(user_name),
        value="up" if value == "up" else "down",
        at=float(at),  # type: ignore[arg-type]
        note=str(note),
    )
