"""The SQLite store's sign-ins waited for in threads: one row per link, used once."""

from __future__ import annotations

from collections.abc import Sequence

from bot.mcp.sign_in_waits import COLUMNS, KEPT_S, SignInWait
from bot.storage.sqlite.db import Db


class SignInWaitTables:
    """Mixed into :class:`bot.storage.sqlite.store.SqliteStore`."""

    async def add_sign_in_wait(self: Db, wait: SignInWait) -> None:
        w = wait
        async with self.transaction() as db:
            await db.execute(
                "DELETE FROM mcp_sign_in_waits WHERE expires_at < ?", (w.created_at - KEPT_S,)
            )
            await db.execute(
                f"INSERT INTO mcp_sign_in_waits ({COLUMNS})"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (wait_id) DO NOTHING",
                w.values(),
            )

    async def get_sign_in_wait(self: Db, wait_id: str) -> SignInWait | None:
        async with self.db.execute(
            f"SELECT {COLUMNS} FROM mcp_sign_in_waits WHERE wait_id = ?", (wait_id,)
        ) as cur:
            row = await cur.fetchone()
        return None if row is None else SignInWait.read(tuple(row))

    async def use_sign_in_wait(self: Db, wait_id: str, now: float) -> bool:
        async with self.transaction() as db:
            cursor = await db.execute(
                "UPDATE mcp_sign_in_waits SET used_at = ?"
                " WHERE wait_id = ? AND used_at IS NULL AND expires_at > ?",
                (now, wait_id, now),
            )
            return cursor.rowcount == 1

    async def end_sign_in_wait(self: Db, wait_id: str, now: float) -> bool:
        async with self.transaction() as db:
            cursor = await db.execute(
                "UPDATE mcp_sign_in_waits SET used_at = ? WHERE wait_id = ? AND used_at IS NULL",
                (now, wait_id),
            )
            return cursor.rowcount == 1

    async def hand_sign_in_wait(self: Db, wait_id: str, handed: str, now: float) -> bool:
        async with self.transaction() as db:
            cursor = await db.execute(
                "UPDATE mcp_sign_in_waits SET handed = ? WHERE wait_id = ? AND handed IS NULL"
                " AND used_at IS NULL AND expires_at > ?",
                (handed, wait_id, now),
            )
            return cursor.rowcount == 1

    async def take_sign_in_wait(self: Db, wait_id: str, owner: str, now: float) -> str | None:
        async with self.transaction() as db:
            cursor = await db.execute(
                "UPDATE mcp_sign_in_waits SET used_at = ?, taken_at = ? WHERE wait_id = ?"
                " AND owner = ? AND handed IS NOT NULL AND used_at IS NULL RETURNING handed",
                (now, now, wait_id, owner),
            )
            row = await cursor.fetchone()
        return None if row is None else str(row[0])

    async def release_sign_in_wait(self: Db, wait_id: str, owner: str) -> None:
        async with self.transaction() as db:
            await db.execute(
                "UPDATE mcp_sign_in_waits SET owner = '' WHERE wait_id = ? AND owner = ?",
                (wait_id, owner),
            )

    async def sign_in_waits_for(self: Db, key: str, call_ids: Sequence[str]) -> list[SignInWait]:
        if not call_ids:
            return []
        marks = ", ".join("?" for _ in call_ids)
        async with self.db.execute(
            f"SELECT {COLUMNS} FROM mcp_sign_in_waits WHERE key = ? AND call_id IN ({marks})"
            " ORDER BY created_at, wait_id",
            (key, *call_ids),
        ) as cur:
            rows = await cur.fetchall()
        return [SignInWait.read(tuple(row)) for row in rows]
