"""The SQLite store's MCP sign-ins: sealed blobs, each written only over the version its
writer read (:class:`bot.mcp.tokens.SignInKeep`)."""

from __future__ import annotations

from bot.mcp.tokens import Kept
from bot.storage.sqlite.db import Db


class SignInTables:
    """Mixed into :class:`bot.storage.sqlite.store.SqliteStore`."""

    async def sign_in(self: Db, server: str, subject: str) -> Kept | None:
        async with self.db.execute(
            "SELECT sealed, version FROM mcp_sign_ins WHERE server = ? AND subject = ?",
            (server, subject),
        ) as cur:
            row = await cur.fetchone()
        return None if row is None else Kept(bytes(row[0]), int(row[1]))

    async def keep_sign_in(
        self: Db, server: str, subject: str, sealed: bytes, version: int, now: float
    ) -> bool:
        async with self.transaction() as db:
            if version == 0:
                cursor = await db.execute(
                    "INSERT INTO mcp_sign_ins (server, subject, sealed, version, updated_at)"
                    " VALUES (?, ?, ?, 1, ?) ON CONFLICT (server, subject) DO NOTHING",
                    (server, subject, sealed, now),
                )
            else:
                cursor = await db.execute(
                    "UPDATE mcp_sign_ins SET sealed = ?, version = version + 1, updated_at = ?"
                    " WHERE server = ? AND subject = ? AND version = ?",
                    (sealed, now, server, subject, version),
                )
            return cursor.rowcount == 1

    async def forget_sign_in(self: Db, server: str, subject: str) -> None:
        async with self.transaction() as db:
            await db.execute(
                "DELETE FROM mcp_sign_ins WHERE server = ? AND subject = ?", (server, subject)
            )

    async def sign_ins(self: Db, server: str) -> list[tuple[str, bytes]]:
        async with self.db.execute(
            "SELECT subject, sealed FROM mcp_sign_ins WHERE server = ? ORDER BY subject",
            (server,),
        ) as cur:
            rows = await cur.fetchall()
        return [(str(row[0]), bytes(row[1])) for row in rows]
