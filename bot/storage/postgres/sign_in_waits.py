"""The PostgreSQL store's sign-ins waited for in threads: one row per link, used once; with
several workers, a callback that reaches another worker than the one whose call waits is
handed over through its row."""

from __future__ import annotations

from collections.abc import Sequence

from bot.mcp.sign_in_waits import COLUMNS, KEPT_S, SignInWait
from bot.storage.postgres.db import PgDb


class SignInWaitTables:
    """Mixed into :class:`bot.storage.postgres.store.PostgresStore`."""

    async def add_sign_in_wait(self: PgDb, wait: SignInWait) -> None:
        w = wait
        async with self.transaction() as db:
            await db.execute(
                "DELETE FROM mcp_sign_in_waits WHERE expires_at < $1", w.created_at - KEPT_S
            )
            await db.execute(
                f"INSERT INTO mcp_sign_in_waits ({COLUMNS})"
                " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)"
                " ON CONFLICT (wait_id) DO NOTHING",
                *w.values(),
            )

    async def get_sign_in_wait(self: PgDb, wait_id: str) -> SignInWait | None:
        row = await self.pool.fetchrow(
            f"SELECT {COLUMNS} FROM mcp_sign_in_waits WHERE wait_id = $1", wait_id
        )
        return None if row is None else SignInWait.read(tuple(row))

    async def use_sign_in_wait(self: PgDb, wait_id: str, now: float) -> bool:
        async with self.transaction() as db:
            status = await db.execute(
                "UPDATE mcp_sign_in_waits SET used_at = $1"
                " WHERE wait_id = $2 AND used_at IS NULL AND expires_at > $1",
                now,
                wait_id,
            )
        return str(status).endswith(" 1")

    async def end_sign_in_wait(self: PgDb, wait_id: str, now: float) -> bool:
        async with self.transaction() as db:
            status = await db.execute(
                "UPDATE mcp_sign_in_waits SET used_at = $1 WHERE wait_id = $2 AND used_at IS NULL",
                now,
                wait_id,
            )
        return str(status).endswith(" 1")

    async def hand_sign_in_wait(self: PgDb, wait_id: str, handed: str, now: float) -> bool:
        async with self.transaction() as db:
            status = await db.execute(
                "UPDATE mcp_sign_in_waits SET handed = $1 WHERE wait_id = $2 AND handed IS NULL"
                " AND used_at IS NULL AND expires_at > $3",
                handed,
                wait_id,
                now,
            )
        return str(status).endswith(" 1")

    async def take_sign_in_wait(self: PgDb, wait_id: str, owner: str, now: float) -> str | None:
        async with self.transaction() as db:
            found = await db.fetchval(
                "UPDATE mcp_sign_in_waits SET used_at = $1, taken_at = $1 WHERE wait_id = $2"
                " AND owner = $3 AND handed IS NOT NULL AND used_at IS NULL RETURNING handed",
                now,
                wait_id,
                owner,
            )
        return None if found is None else str(found)

    async def release_sign_in_wait(self: PgDb, wait_id: str, owner: str) -> None:
        async with self.transaction() as db:
            await db.execute(
                "UPDATE mcp_sign_in_waits SET owner = '' WHERE wait_id = $1 AND owner = $2",
                wait_id,
                owner,
            )

    async def sign_in_waits_for(self: PgDb, key: str, call_ids: Sequence[str]) -> list[SignInWait]:
        if not call_ids:
            return []
        rows = await self.pool.fetch(
            f"SELECT {COLUMNS} FROM mcp_sign_in_waits WHERE key = $1 AND call_id = ANY($2)"
            " ORDER BY created_at, wait_id",
            key,
            list(call_ids),
        )
        return [SignInWait.read(tuple(row)) for row in rows]
